//! Streams a greedy completion through the safe wrapper.
//! usage: lmrt-stream-rust MODEL [PROMPT] [MAX_TOKENS]
use std::io::Write;
use std::ops::ControlFlow;
use std::process::ExitCode;

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 {
        return Err(format!("usage: {} MODEL [PROMPT] [MAX_TOKENS]", args[0]).into());
    }
    lmrt::layout::check().map_err(|e| format!("these bindings do not match lmrt.h:\n{e}"))?;
    lmrt::check_abi()?;
    let prompt = args
        .get(2)
        .map(String::as_str)
        .unwrap_or("Once upon a time");
    let max_tokens: i32 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(128);

    let model = lmrt::Model::open(&args[1])?;
    let mut ctx = lmrt::Context::new(
        &model,
        lmrt::ContextParams {
            n_ctx: 256,
            n_threads: 2,
        },
    )?;
    let mut out = std::io::stdout().lock();
    let done = ctx.generate(prompt, max_tokens, |piece| {
        // A closed stdout cancels the generation.
        match out.write_all(piece.as_bytes()).and_then(|_| out.flush()) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    })?;
    writeln!(out)?;
    eprintln!(
        "[{:?}: {} prompt + {} generated tokens]",
        done.finish_reason, done.prompt_tokens, done.completion_tokens
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lmrt-stream-rust: {e}");
            ExitCode::FAILURE
        }
    }
}
