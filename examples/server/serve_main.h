// Entry point of `lmrt serve`, linked into the lmrt command-line tool.
#pragma once

// argv[1] is "serve"; options follow. Returns the process exit status.
int cmd_serve(int argc, char** argv);
