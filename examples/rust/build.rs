//! Finds the installed lmrt with pkg-config (no crates needed), links it, and measures the public
//! structs with the system C compiler so the tests can compare them with src/sys.rs.
use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn pkg_config_variable(name: &str) -> String {
    let out = Command::new(env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
        .args(["--variable", name, "lmrt"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run pkg-config ({e}); install pkg-config and lmrt"));
    if !out.status.success() {
        panic!(
            "pkg-config cannot find lmrt: {}; set PKG_CONFIG_PATH=<prefix>/lib/pkgconfig",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout)
        .expect("pkg-config prints UTF-8")
        .trim()
        .to_string()
}

/// (struct name, field names) of every `pub struct lmrt_*` in src/sys.rs with public fields.
fn mirrored_structs(sys_rs: &str) -> Vec<(String, Vec<String>)> {
    let mut structs = Vec::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in sys_rs.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("pub struct ") {
            let name = rest.trim_end_matches(" {").trim().to_string();
            current = Some((name, Vec::new()));
        } else if line == "}" {
            if let Some((name, fields)) = current.take() {
                if !fields.is_empty() {
                    structs.push((name, fields));
                }
            }
        } else if let (Some((_, fields)), Some(rest)) =
            (current.as_mut(), line.strip_prefix("pub "))
        {
            if let Some((field, _)) = rest.split_once(':') {
                fields.push(field.trim().to_string());
            }
        }
    }
    structs
}

fn main() {
    println!("cargo:rerun-if-changed=src/sys.rs");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let libdir = pkg_config_variable("libdir");
    let includedir = pkg_config_variable("includedir");
    println!("cargo:rustc-link-search=native={libdir}");
    println!("cargo:rustc-link-lib=dylib=lmrt");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    println!("cargo:rerun-if-changed={includedir}/lmrt/lmrt.h");

    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let structs = mirrored_structs(&fs::read_to_string("src/sys.rs").expect("read src/sys.rs"));

    // A C program printing "size" and "offset size" lines, in the order of `structs`.
    let mut probe = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <lmrt/lmrt.h>\nint main(void) {\n",
    );
    for (name, fields) in &structs {
        writeln!(probe, "  printf(\"%zu\\n\", sizeof({name}));").unwrap();
        for f in fields {
            writeln!(
                probe,
                "  printf(\"%zu %zu\\n\", offsetof({name}, {f}), sizeof((({name}*)0)->{f}));"
            )
            .unwrap();
        }
    }
    probe.push_str("  return 0;\n}\n");
    let probe_c = out_dir.join("layout_probe.c");
    let probe_bin = out_dir.join("layout_probe");
    fs::write(&probe_c, probe).unwrap();
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .arg(format!("-I{includedir}"))
        .arg(&probe_c)
        .arg("-o")
        .arg(&probe_bin)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler '{cc}' ({e}); set CC"));
    assert!(
        status.success(),
        "the layout probe did not compile against {includedir}/lmrt/lmrt.h"
    );
    let out = Command::new(&probe_bin)
        .output()
        .expect("run the layout probe");
    let measured = String::from_utf8(out.stdout).unwrap();
    let mut lines = measured.lines();

    let mut table = String::from("pub(crate) fn structs() -> Vec<StructLayout> {\n    vec![\n");
    for (name, fields) in &structs {
        let c_size: usize = lines.next().unwrap().parse().unwrap();
        writeln!(
            table,
            "    StructLayout {{ name: \"{name}\", c_size: {c_size}, rust_size: std::mem::size_of::<sys::{name}>(), fields: vec!["
        )
        .unwrap();
        for f in fields {
            let (off, size) = lines.next().unwrap().split_once(' ').unwrap();
            writeln!(
                table,
                "        FieldLayout {{ name: \"{f}\", c_offset: {off}, c_size: {size}, \
                 rust_offset: std::mem::offset_of!(sys::{name}, {f}), \
                 rust_size: field_size(|s: &sys::{name}| &s.{f}) }},"
            )
            .unwrap();
        }
        table.push_str("    ] },\n");
    }
    table.push_str("    ]\n}\n");
    fs::write(Path::new(&out_dir).join("layout_table.rs"), table).unwrap();
}
