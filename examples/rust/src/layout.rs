//! Compares each `#[repr(C)]` struct of `sys` with the installed lmrt.h as the C compiler lays it
//! out (build.rs measures it): every mirrored field must sit at the same offset with the same size.
//! The C struct may be larger than the mirror: structs grow only at their end and the library
//! honours the caller's `struct_size`, so a binding written for an older header stays correct.
use crate::sys;

pub(crate) struct FieldLayout {
    pub name: &'static str,
    pub c_offset: usize,
    pub c_size: usize,
    pub rust_offset: usize,
    pub rust_size: usize,
}

pub(crate) struct StructLayout {
    pub name: &'static str,
    pub c_size: usize,
    pub rust_size: usize,
    pub fields: Vec<FieldLayout>,
}

fn field_size<S, F>(_: fn(&S) -> &F) -> usize {
    std::mem::size_of::<F>()
}

include!(concat!(env!("OUT_DIR"), "/layout_table.rs"));

/// Ok with the number of fields checked, or every mismatch found.
pub fn check() -> Result<usize, String> {
    let mut problems = Vec::new();
    let mut n_fields = 0;
    for s in structs() {
        if s.rust_size > s.c_size {
            problems.push(format!(
                "{}: {} bytes in Rust, {} in C",
                s.name, s.rust_size, s.c_size
            ));
        }
        for f in &s.fields {
            n_fields += 1;
            if f.rust_offset != f.c_offset || f.rust_size != f.c_size {
                problems.push(format!(
                    "{}.{}: offset {} size {} in Rust, offset {} size {} in C",
                    s.name, f.name, f.rust_offset, f.rust_size, f.c_offset, f.c_size
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(n_fields)
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_mirrored_struct_matches_the_c_header() {
        let n = super::check().unwrap_or_else(|e| panic!("layout mismatch:\n{e}"));
        assert!(n >= 70, "only {n} fields were checked");
    }

    #[test]
    fn all_public_structs_are_mirrored() {
        let names: Vec<_> = super::structs().iter().map(|s| s.name).collect();
        for want in [
            "lmrt_model_params",
            "lmrt_model_info",
            "lmrt_context_params",
            "lmrt_token_event",
            "lmrt_generate_request",
            "lmrt_generate_result",
            "lmrt_engine_params",
            "lmrt_engine_stats",
        ] {
            assert!(names.contains(&want), "{want} is not checked");
        }
    }
}
