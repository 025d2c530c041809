module lmrt.example/lmrt

go 1.19
