//! The safe wrapper against a real model: $LMRT_MODEL names a GGUF file (scripts/test-examples.sh
//! sets it to TinyStories-656K-Q8_0.gguf).
use std::ops::ControlFlow;

fn model_path() -> String {
    std::env::var("LMRT_MODEL").expect("set LMRT_MODEL to a GGUF model file to run these tests")
}

/// A context of `n_ctx` cells and `n_threads` threads on `model`.
fn context(model: &lmrt::Model, n_ctx: u32, n_threads: u32) -> lmrt::Context<'_> {
    lmrt::Context::new(model, lmrt::ContextParams { n_ctx, n_threads }).unwrap()
}

#[test]
fn isa_names_one_of_the_kernel_sets() {
    let isa = lmrt::isa();
    assert!(
        ["avx512", "avx2vnni", "avx2", "neon", "scalar"].contains(&isa.as_str()),
        "{isa}"
    );
    #[cfg(target_arch = "aarch64")]
    assert!(isa == "neon" || isa == "scalar", "{isa}");
    #[cfg(target_arch = "x86_64")]
    assert_ne!(isa, "neon");
}

#[test]
fn grammars_are_checked_without_a_model() {
    assert!(lmrt::grammar_check("root ::= \"yes\" | \"no\"").is_ok());
    let err = lmrt::grammar_check("root ::= root \"a\"").unwrap_err();
    assert_eq!(err.status, lmrt::sys::LMRT_ERR_INVALID_ARGUMENT);
    assert!(err.message.contains("recursive"), "{}", err.message);
    let err = lmrt::grammar_check("root ::= undefined-rule").unwrap_err();
    assert!(err.message.contains("undefined-rule"), "{}", err.message);
    assert!(lmrt::grammar_check("root ::= \"a\"\0").is_err());
}

#[test]
fn a_json_schema_becomes_a_grammar_that_checks() {
    let gbnf = lmrt::json_schema_to_grammar(
        r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#,
    )
    .unwrap();
    assert!(gbnf.contains("root ::="), "{gbnf}");
    assert!(lmrt::grammar_check(&gbnf).is_ok());
    let err = lmrt::json_schema_to_grammar(r#"{"type":"object""#).unwrap_err();
    assert_eq!(err.status, lmrt::sys::LMRT_ERR_INVALID_ARGUMENT);
    assert!(!err.message.is_empty());
}

#[test]
fn a_missing_file_is_an_io_error_with_its_name() {
    let err = lmrt::Model::open("/nonexistent/model.gguf")
        .err()
        .expect("opening a missing file must fail");
    assert_eq!(err.status, lmrt::sys::LMRT_ERR_IO);
    assert!(err.message.contains("nonexistent"), "{err}");
}

#[test]
fn streamed_pieces_add_up_to_the_completion() {
    let model = lmrt::Model::open(model_path()).unwrap();
    assert_eq!(model.info().unwrap().architecture, "llama");
    let mut ctx = context(&model, 128, 1);
    let mut streamed = String::new();
    let done = ctx
        .generate("Once upon a time", 24, |piece| {
            streamed.push_str(piece);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert!(!done.text.is_empty());
    assert_eq!(streamed, done.text);
    assert_eq!(done.tokens.len(), done.completion_tokens as usize);
    assert_eq!(
        done.prompt_tokens as usize,
        model.tokenize("Once upon a time", true).unwrap().len()
    );
}

#[test]
fn breaking_from_the_closure_cancels() {
    let model = lmrt::Model::open(model_path()).unwrap();
    let mut ctx = context(&model, 128, 1);
    let mut pieces = 0;
    let done = ctx
        .generate("Once upon a time", 64, |_| {
            pieces += 1;
            if pieces == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(done.finish_reason, lmrt::FinishReason::Cancelled);
    assert_eq!(pieces, 3);
}

#[test]
fn a_panic_in_the_closure_reaches_the_caller() {
    let model = lmrt::Model::open(model_path()).unwrap();
    let mut ctx = context(&model, 128, 1);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ctx.generate("Once upon a time", 8, |_| panic!("stop here"))
            .ok();
    }));
    assert!(caught.is_err());
    // The context is still usable afterwards.
    assert!(ctx
        .generate("Once", 4, |_| ControlFlow::Continue(()))
        .is_ok());
}

#[test]
fn a_model_is_shared_by_threads_each_with_its_own_context() {
    let model = lmrt::Model::open(model_path()).unwrap();
    let alone = context(&model, 128, 1)
        .generate("The little dog", 24, |_| ControlFlow::Continue(()))
        .unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut ctx = context(&model, 128, 1);
                    ctx.generate("The little dog", 24, |_| ControlFlow::Continue(()))
                        .unwrap()
                        .text
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), alone.text);
        }
    });
}

#[test]
fn an_engine_runs_requests_together_with_the_tokens_each_gets_alone() {
    let model = lmrt::Model::open(model_path()).unwrap();
    let params = lmrt::ContextParams {
        n_ctx: 256,
        n_threads: 1,
    };
    let prompts = [
        ("Once upon a time", 24),
        ("The little dog", 16),
        ("Lily", 30),
    ];
    let alone: Vec<lmrt::Completion> = prompts
        .iter()
        .map(|(p, n)| {
            lmrt::Context::new(&model, params)
                .unwrap()
                .generate(p, *n, |_| ControlFlow::Continue(()))
                .unwrap()
        })
        .collect();
    let mut ctx = lmrt::Context::new(&model, params).unwrap();
    let mut streamed = vec![String::new(); prompts.len()];
    let mut cancelled_pieces = 0;
    {
        let mut engine = lmrt::Engine::new(&mut ctx, 4, 4).unwrap();
        let mut ids = Vec::new();
        for ((p, n), out) in prompts.iter().zip(streamed.iter_mut()) {
            ids.push(
                engine
                    .submit(p, *n, move |piece| {
                        out.push_str(piece);
                        ControlFlow::Continue(())
                    })
                    .unwrap(),
            );
        }
        // A fourth request cancels itself from its closure after two pieces.
        let victim = engine
            .submit("Tom", 40, |_| {
                cancelled_pieces += 1;
                if cancelled_pieces == 2 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        assert!(engine.step().unwrap() >= 1);
        engine.run().unwrap();
        for (i, id) in ids.iter().enumerate() {
            let got = engine.result(*id).unwrap();
            assert_eq!(got.tokens, alone[i].tokens, "request {i}");
            assert_eq!(got.text, alone[i].text, "request {i}");
            assert_eq!(got.finish_reason, alone[i].finish_reason);
            engine.release(*id).unwrap();
        }
        assert_eq!(
            engine.result(victim).unwrap().finish_reason,
            lmrt::FinishReason::Cancelled
        );
        let err = engine.cancel(9999).err().expect("an unknown id is refused");
        assert_eq!(err.status, lmrt::sys::LMRT_ERR_INVALID_ARGUMENT);
    }
    for (i, s) in streamed.iter().enumerate() {
        assert_eq!(*s, alone[i].text, "streamed text of request {i}");
    }
    assert_eq!(cancelled_pieces, 2);
}

#[test]
fn a_started_engine_steps_on_its_own_thread_and_wait_blocks_until_a_request_finished() {
    let model = lmrt::Model::open(model_path()).unwrap();
    let params = lmrt::ContextParams {
        n_ctx: 256,
        n_threads: 1,
    };
    let prompts = [
        ("Once upon a time", 24),
        ("The little dog", 16),
        ("Lily", 30),
    ];
    let alone: Vec<lmrt::Completion> = prompts
        .iter()
        .map(|(p, n)| {
            lmrt::Context::new(&model, params)
                .unwrap()
                .generate(p, *n, |_| ControlFlow::Continue(()))
                .unwrap()
        })
        .collect();
    let mut ctx = lmrt::Context::new(&model, params).unwrap();
    let engine_thread = std::sync::Mutex::new(Vec::new());
    let mut engine = lmrt::Engine::new(&mut ctx, 2, 4).unwrap();
    let stats = engine.stats().unwrap();
    assert!(!stats.started);
    assert_eq!(stats.max_sequences, 2);
    assert_eq!((stats.queued, stats.running), (0, 0));
    engine.start().unwrap();
    assert!(engine.stats().unwrap().started);
    assert!(
        engine.step().is_err(),
        "a started engine refuses to step on the caller's thread"
    );
    let mut ids = Vec::new();
    for (p, n) in prompts {
        let seen = &engine_thread;
        ids.push(
            engine
                .submit(p, n, move |_| {
                    seen.lock().unwrap().push(std::thread::current().id());
                    ControlFlow::Continue(())
                })
                .unwrap(),
        );
    }
    for (i, id) in ids.iter().enumerate() {
        assert!(engine.wait(*id, None).unwrap(), "request {i} finished");
        let got = engine.result(*id).unwrap();
        assert_eq!(got.tokens, alone[i].tokens, "request {i}");
        assert_eq!(got.finish_reason, alone[i].finish_reason);
        engine.release(*id).unwrap();
    }
    engine.stop().unwrap();
    engine.stop().unwrap(); // stopping a stopped engine does nothing
    let stats = engine.stats().unwrap();
    assert!(!stats.started);
    assert_eq!((stats.queued, stats.running), (0, 0));
    let threads = engine_thread.lock().unwrap().clone();
    assert!(!threads.is_empty());
    assert!(
        threads.iter().all(|t| *t != std::thread::current().id()),
        "the closures ran on the engine's thread"
    );
    let err = engine
        .wait(9999, Some(std::time::Duration::ZERO))
        .err()
        .expect("an unknown id is refused");
    assert_eq!(err.status, lmrt::sys::LMRT_ERR_INVALID_ARGUMENT);
}

#[test]
fn on_finish_comes_once_per_request_with_its_finish_reason() {
    let model = lmrt::Model::open(model_path()).unwrap();
    let mut ctx = context(&model, 256, 1);
    let finished = std::sync::Mutex::new(Vec::new());
    let mut engine = lmrt::Engine::new(&mut ctx, 2, 4).unwrap();
    let mut ids = Vec::new();
    for (i, (p, n)) in [
        ("Once upon a time", 12),
        ("The little dog", 40),
        ("Lily", 8),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = lmrt::Request::new(p);
        r.max_tokens = n;
        let seen = &finished;
        let on_finish = move |why: lmrt::FinishReason| seen.lock().unwrap().push((i, why));
        let id = if i == 2 {
            // No on_finish of its own: the engine's notification passes it by.
            engine
                .submit_request(&r, |_| ControlFlow::Continue(()))
                .unwrap()
        } else {
            engine
                .submit_request_with_finish(&r, |_| ControlFlow::Continue(()), on_finish)
                .unwrap()
        };
        ids.push(id);
    }
    engine.step().unwrap();
    assert!(
        finished.lock().unwrap().is_empty(),
        "nothing has finished after one step"
    );
    engine.cancel(ids[1]).unwrap();
    engine.run().unwrap();
    let mut got = finished.lock().unwrap().clone();
    got.sort_by_key(|(i, _)| *i);
    let first = engine.result(ids[0]).unwrap().finish_reason;
    assert_ne!(first, lmrt::FinishReason::None);
    assert_eq!(
        got,
        vec![(0, first), (1, lmrt::FinishReason::Cancelled)],
        "each request with an on_finish reported once, with the reason its result gives"
    );
    assert_eq!(
        engine.result(ids[1]).unwrap().finish_reason,
        lmrt::FinishReason::Cancelled
    );
}

#[test]
fn engine_params_keep_or_drop_finished_prefixes() {
    let model = lmrt::Model::open(model_path()).unwrap();
    let params = lmrt::ContextParams {
        n_ctx: 256,
        n_threads: 1,
    };
    let defaults = lmrt::EngineParams::default();
    assert_eq!(
        (
            defaults.max_sequences,
            defaults.prefill_chunk,
            defaults.prefix_reuse,
            defaults.retained_sequences
        ),
        (4, 64, true, 4)
    );
    for (reuse, retained) in [(true, 4), (false, 0)] {
        let mut ctx = lmrt::Context::new(&model, params).unwrap();
        let p = lmrt::EngineParams {
            prefix_reuse: reuse,
            retained_sequences: retained,
            ..defaults
        };
        let mut engine = lmrt::Engine::with_params(&mut ctx, &p).unwrap();
        let mut texts = Vec::new();
        for _ in 0..2 {
            let id = engine
                .submit("Once upon a time", 12, |_| ControlFlow::Continue(()))
                .unwrap();
            engine.run().unwrap();
            texts.push(engine.result(id).unwrap().text);
            engine.release(id).unwrap();
        }
        assert_eq!(texts[0], texts[1]);
        let stats = engine.stats().unwrap();
        // Kept: the finished sequence stays in the arena as a prefix; dropped: its cells go back.
        assert_eq!(stats.cached > 0, reuse, "prefix_reuse {reuse}: {stats:?}");
        assert_eq!(
            stats.cells_used > 0,
            reuse,
            "prefix_reuse {reuse}: {stats:?}"
        );
    }
    let mut ctx = lmrt::Context::new(&model, params).unwrap();
    let bad = lmrt::EngineParams {
        retained_sequences: 17,
        ..defaults
    };
    let err = lmrt::Engine::with_params(&mut ctx, &bad)
        .err()
        .expect("17 retained sequences are refused");
    assert_eq!(err.status, lmrt::sys::LMRT_ERR_INVALID_ARGUMENT);
}

fn sampled(prompt: &str, seed: u64) -> lmrt::Request {
    let mut r = lmrt::Request::new(prompt);
    r.max_tokens = 32;
    r.temperature = 0.9;
    r.top_k = 40;
    r.top_p = 0.95;
    r.repeat_penalty = 1.1;
    r.seed = Some(seed);
    r
}

#[test]
fn seeded_requests_in_an_engine_get_the_tokens_and_logprobs_they_get_alone() {
    let model = lmrt::Model::open(model_path()).unwrap();
    let mut reqs = vec![
        sampled("Once upon a time", 7),
        sampled("Once upon a time", 8),
        sampled("The little dog", 7),
    ];
    reqs[2].logprobs = Some(2);
    let alone: Vec<_> = reqs
        .iter()
        .map(|r| {
            let mut ctx = context(&model, 256, 1);
            ctx.generate_request(r, |_| ControlFlow::Continue(()))
                .unwrap()
        })
        .collect();
    assert_ne!(
        alone[0].text, alone[1].text,
        "seeds 7 and 8 gave the same text: the seed is not used"
    );
    assert_eq!(alone[2].logprobs.len(), alone[2].tokens.len());
    assert!(alone[0].logprobs.is_empty());
    let mut ctx = context(&model, 256, 2);
    let mut engine = lmrt::Engine::new(&mut ctx, 4, 8).unwrap();
    let ids: Vec<_> = reqs
        .iter()
        .map(|r| {
            engine
                .submit_request(r, |_| ControlFlow::Continue(()))
                .unwrap()
        })
        .collect();
    engine.run().unwrap();
    for (i, id) in ids.into_iter().enumerate() {
        let got = engine.result(id).unwrap();
        assert_eq!(got.tokens, alone[i].tokens, "request {i}");
        assert_eq!(got.text, alone[i].text, "request {i}");
        assert_eq!(got.logprobs, alone[i].logprobs, "request {i}");
    }
}

#[test]
fn logprobs_stops_and_grammars_shape_a_completion() {
    let model = lmrt::Model::open(model_path()).unwrap();
    let mut ctx = context(&model, 256, 1);
    let mut r = lmrt::Request::new("Once upon a time");
    r.max_tokens = 48;
    r.logprobs = Some(3);
    let full = ctx
        .generate_request(&r, |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(full.logprobs.len(), full.tokens.len());
    for (lp, &tok) in full.logprobs.iter().zip(&full.tokens) {
        // Greedy: the chosen token is the most likely one; the alternatives come best first.
        assert_eq!(lp.chosen.token, tok);
        assert_eq!(lp.top.len(), 3);
        assert_eq!(lp.top[0], lp.chosen);
        assert!(
            lp.chosen.logprob <= 0.0
                && lp.top[1].logprob <= lp.top[0].logprob
                && lp.top[2].logprob <= lp.top[1].logprob
        );
    }
    // A stop string: the completion ends just before it.
    let words: Vec<_> = full.text.split_whitespace().collect();
    assert!(words.len() >= 6, "too short: {:?}", full.text);
    let stop = format!(" {}", words[4]);
    let at = full.text.find(&stop).unwrap();
    r.logprobs = None;
    r.stop = vec!["never appears".into(), stop.clone()];
    let stopped = ctx
        .generate_request(&r, |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(stopped.finish_reason, lmrt::FinishReason::Stop);
    assert_eq!(stopped.text, full.text[..at], "stop {stop:?}");
    // JSON Schema (the test model's 2,048-token vocabulary has no "{" or "[": an integer).
    for seed in 1..=3 {
        let mut j = sampled("Once upon a time", seed);
        j.json_schema = Some(r#"{"type": "integer", "minimum": 10, "maximum": 99}"#.into());
        let done = ctx
            .generate_request(&j, |_| ControlFlow::Continue(()))
            .unwrap();
        let n: i64 = done
            .text
            .parse()
            .unwrap_or_else(|_| panic!("seed {seed}: {:?} is not an integer", done.text));
        assert!(
            (10..=99).contains(&n) && done.finish_reason == lmrt::FinishReason::Eos,
            "seed {seed}: {done:?}"
        );
    }
    let mut bad = lmrt::Request::new("Hi");
    bad.grammar = Some("root ::= (\"a\"".into());
    let err = ctx
        .generate_request(&bad, |_| ControlFlow::Continue(()))
        .err()
        .expect("an unterminated grammar");
    assert_eq!(err.status, lmrt::sys::LMRT_ERR_INVALID_ARGUMENT);
    bad.grammar = None;
    bad.stop = vec!["a\0b".into()];
    let err = ctx
        .generate_request(&bad, |_| ControlFlow::Continue(()))
        .err()
        .expect("a NUL in a stop string");
    assert_eq!(err.status, lmrt::sys::LMRT_ERR_INVALID_ARGUMENT);
}
