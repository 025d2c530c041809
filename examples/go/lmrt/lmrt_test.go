package lmrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// modelPath is $LMRT_MODEL, a GGUF file (scripts/test-examples.sh sets TinyStories-656K-Q8_0).
func modelPath(t *testing.T) string {
	p := os.Getenv("LMRT_MODEL")
	if p == "" {
		t.Fatal("set LMRT_MODEL to a GGUF model file to run these tests")
	}
	return p
}

// openEngine creates a context of nCtx cells and an engine on it; closeAll closes both.
func openEngine(t *testing.T, m *Model, nCtx, nThreads uint32, p EngineParams) (e *Engine, closeAll func()) {
	t.Helper()
	c, err := m.NewContext(ContextParams{NCtx: nCtx, NThreads: nThreads})
	if err != nil {
		t.Fatal(err)
	}
	if e, err = c.NewEngineWithParams(p); err != nil {
		c.Close()
		t.Fatal(err)
	}
	return e, func() { e.Close(); c.Close() }
}

// generateAlone runs r on a fresh 256-cell, 1-thread context of m: what a request gets alone.
func generateAlone(t *testing.T, m *Model, r *Request) *Completion {
	t.Helper()
	c, err := m.NewContext(ContextParams{NCtx: 256, NThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done, err := c.GenerateRequest(context.Background(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return done
}

// engineParams is the library's defaults with maxSequences and prefillChunk.
func engineParams(maxSequences, prefillChunk uint32) EngineParams {
	p := DefaultEngineParams()
	p.MaxSequences, p.PrefillChunk = maxSequences, prefillChunk
	return p
}

func TestEveryPublicStructHasTheReleasedLayout(t *testing.T) {
	n, err := CheckLayout()
	if err != nil {
		t.Fatal(err)
	}
	if n != 67 {
		t.Fatalf("checked %d fields, want 67", n)
	}
}

func TestISANamesOneOfTheKernelSets(t *testing.T) {
	switch isa := ISA(); isa {
	case "avx512", "avx2vnni", "avx2", "neon", "scalar":
	default:
		t.Fatalf("ISA() = %q", isa)
	}
}

func TestGrammarsAreCheckedWithoutAModel(t *testing.T) {
	if err := GrammarCheck(`root ::= "yes" | "no"`); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := GrammarCheck(`root ::= root "a"`); !errors.As(err, &e) || e.Status != InvalidArgument ||
		!strings.Contains(e.Message, "recursive") {
		t.Fatalf("left recursion: %v", err)
	}
	if err := GrammarCheck("root ::= \"a\"\x00 junk"); err == nil {
		t.Fatal("a NUL in the grammar was accepted")
	}
	gbnf, err := JSONSchemaToGrammar(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	if err != nil || !strings.Contains(gbnf, "root ::=") {
		t.Fatalf("%q %v", gbnf, err)
	}
	if err := GrammarCheck(gbnf); err != nil {
		t.Fatal(err)
	}
	if _, err := JSONSchemaToGrammar(`{"type":"object"`); !errors.As(err, &e) || e.Status != InvalidArgument {
		t.Fatalf("bad JSON: %v", err)
	}
}

func TestOpeningAMissingFileIsAnIOError(t *testing.T) {
	_, err := Open("/nonexistent/model.gguf")
	var e *Error
	if !errors.As(err, &e) || e.Status != IO || !strings.Contains(e.Message, "nonexistent") {
		t.Fatalf("got %v", err)
	}
}

func openBoth(t *testing.T) (*Model, *Context) {
	m, err := Open(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.NewContext(ContextParams{NCtx: 128, NThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m, c
}

func TestStreamedPiecesAddUpToTheCompletion(t *testing.T) {
	_, c := openBoth(t)
	var streamed strings.Builder
	done, err := c.Generate(context.Background(), "Once upon a time", 24, func(s string) error {
		streamed.WriteString(s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if done.Text == "" || streamed.String() != done.Text || len(done.Tokens) != done.CompletionTokens {
		t.Fatalf("streamed %q, completion %+v", streamed.String(), done)
	}
}

func TestCancellingTheContextStopsTheGeneration(t *testing.T) {
	_, c := openBoth(t)
	ctx, cancel := context.WithCancel(context.Background())
	pieces := 0
	done, err := c.Generate(ctx, "Once upon a time", 64, func(string) error {
		pieces++
		if pieces == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || done == nil || done.FinishReason != FinishCancelled || pieces != 3 {
		t.Fatalf("err %v, pieces %d, completion %+v", err, pieces, done)
	}
	// An already cancelled context does not start.
	if _, err := c.Generate(ctx, "Once", 4, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestACallbackErrorStopsTheGenerationAndIsReturned(t *testing.T) {
	_, c := openBoth(t)
	stop := errors.New("enough")
	done, err := c.Generate(context.Background(), "Once upon a time", 64, func(string) error { return stop })
	if !errors.Is(err, stop) || done.FinishReason != FinishCancelled || done.CompletionTokens != 1 {
		t.Fatalf("err %v, completion %+v", err, done)
	}
}

func TestAModelWithAnOpenContextRefusesToClose(t *testing.T) {
	m, err := Open(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.NewContext(ContextParams{NCtx: 64, NThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err == nil {
		t.Fatal("closing a model in use succeeded")
	}
	c.Close()
	c.Close() // twice is a no-op
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Generate(context.Background(), "x", 1, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v", err)
	}
}

func TestGoroutinesShareAModelEachWithItsOwnContext(t *testing.T) {
	m, c := openBoth(t)
	alone, err := c.Generate(context.Background(), "The little dog", 24, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	texts := make([]string, 3)
	for i := range texts {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, err := m.NewContext(ContextParams{NCtx: 128, NThreads: 1})
			if err != nil {
				t.Error(err)
				return
			}
			defer ctx.Close()
			done, err := ctx.Generate(context.Background(), "The little dog", 24, nil)
			if err != nil {
				t.Error(err)
				return
			}
			texts[i] = done.Text
		}(i)
	}
	wg.Wait()
	for i, text := range texts {
		if text != alone.Text {
			t.Errorf("goroutine %d: %q, alone: %q", i, text, alone.Text)
		}
	}
}

func TestAnEngineGivesEveryRequestTheTokensItGetsAlone(t *testing.T) {
	m, err := Open(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompts := []string{"Once upon a time", "The little dog", "Lily"}
	lengths := []int{24, 16, 30}
	var alone []*Completion
	for i, p := range prompts {
		alone = append(alone, generateAlone(t, m, &Request{Prompt: p, MaxTokens: lengths[i]}))
	}
	e, closeAll := openEngine(t, m, 256, 1, engineParams(4, 4))
	defer closeAll()
	streamed := make([]strings.Builder, len(prompts))
	var ids []uint64
	for i, p := range prompts {
		i := i
		id, err := e.Submit(context.Background(), p, lengths[i], func(s string) error {
			streamed[i].WriteString(s)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// A fourth request is cancelled through its context once it has streamed a piece.
	ctx, cancel := context.WithCancel(context.Background())
	victim, err := e.Submit(ctx, "Tom", 40, func(string) error { cancel(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		got, err := e.Result(id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != alone[i].Text || len(got.Tokens) != len(alone[i].Tokens) || got.FinishReason != alone[i].FinishReason {
			t.Fatalf("request %d: got %q (%v), alone %q (%v)", i, got.Text, got.FinishReason, alone[i].Text, alone[i].FinishReason)
		}
		for k := range got.Tokens {
			if got.Tokens[k] != alone[i].Tokens[k] {
				t.Fatalf("request %d token %d: %d, alone %d", i, k, got.Tokens[k], alone[i].Tokens[k])
			}
		}
		if streamed[i].String() != got.Text {
			t.Fatalf("request %d streamed %q, result %q", i, streamed[i].String(), got.Text)
		}
		if err := e.Release(id); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.Result(victim)
	if err != nil || got.FinishReason != FinishCancelled {
		t.Fatalf("the cancelled request: %v, %v", got, err)
	}
	var le *Error
	if err := e.Cancel(9999); !errors.As(err, &le) || le.Status != InvalidArgument {
		t.Fatalf("cancelling an unknown id: %v", err)
	}
}

func TestOnFinishComesOncePerRequestWithItsFinishReason(t *testing.T) {
	m, err := Open(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, closeAll := openEngine(t, m, 256, 1, engineParams(2, 4))
	defer closeAll()
	var finished []string
	var ids []uint64
	for i, r := range []Request{{Prompt: "Once upon a time", MaxTokens: 12}, {Prompt: "The little dog", MaxTokens: 40},
		{Prompt: "Lily", MaxTokens: 8}} {
		i, r := i, r
		onFinish := func(why FinishReason) { finished = append(finished, fmt.Sprintf("%d %v", i, why)) }
		if i == 2 {
			onFinish = nil // no notification of its own
		}
		id, err := e.SubmitRequestWithFinish(context.Background(), &r, nil, onFinish)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := e.Step(); err != nil {
		t.Fatal(err)
	}
	if len(finished) != 0 {
		t.Fatalf("finished after one step: %v", finished)
	}
	if err := e.Cancel(ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	first, err := e.Result(ids[0])
	if err != nil || first.FinishReason == FinishNone {
		t.Fatalf("the first request: %v, %v", first, err)
	}
	sort.Strings(finished)
	want := []string{fmt.Sprintf("0 %v", first.FinishReason), fmt.Sprintf("1 %v", FinishCancelled)}
	if strings.Join(finished, ", ") != strings.Join(want, ", ") {
		t.Fatalf("on_finish calls %v, want %v", finished, want)
	}
}

func TestAStartedEngineServesGoroutines(t *testing.T) {
	m, err := Open(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompts := []string{"Once upon a time", "The little dog", "Lily", "Tom"}
	var alone []*Completion
	for _, p := range prompts {
		alone = append(alone, generateAlone(t, m, &Request{Prompt: p, MaxTokens: 24}))
	}
	e, closeAll := openEngine(t, m, 512, 1, engineParams(2, 4))
	defer closeAll()
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	var le *Error
	if _, err := e.Step(); !errors.As(err, &le) || le.Status != InvalidArgument {
		t.Fatalf("Step while started: %v", err)
	}
	got := make([]*Completion, len(prompts))
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Add(1)
		go func(i int, p string) {
			defer wg.Done()
			id, err := e.Submit(context.Background(), p, 24, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if done, err := e.Wait(id, -1); err != nil || !done {
				t.Errorf("wait %d: %v %v", i, done, err)
				return
			}
			if got[i], err = e.Result(id); err != nil {
				t.Error(err)
			}
			if err := e.Release(id); err != nil {
				t.Error(err)
			}
		}(i, p)
	}
	wg.Wait()
	for i := range prompts {
		if got[i] == nil || got[i].Text != alone[i].Text || got[i].FinishReason != alone[i].FinishReason {
			t.Fatalf("request %d: got %+v, alone %q", i, got[i], alone[i].Text)
		}
	}
	if done, err := e.Wait(12345, 10*time.Millisecond); done || !errors.As(err, &le) || le.Status != InvalidArgument {
		t.Fatalf("waiting for an unknown id: %v %v", done, err)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
}

// sampled is a seeded sampling request: temperature, top-k, top-p and a repeat penalty.
func sampled(prompt string, seed uint64) *Request {
	return &Request{Prompt: prompt, MaxTokens: 32, Temperature: 0.9, TopK: 40, TopP: 0.95, RepeatPenalty: 1.1, Seed: seed}
}

func TestSeededRequestsInAnEngineGetTheTokensTheyGetAlone(t *testing.T) {
	m, err := Open(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reqs := []*Request{sampled("Once upon a time", 7), sampled("Once upon a time", 8), sampled("The little dog", 7)}
	reqs[2].Logprobs, reqs[2].TopLogprobs = true, 2
	var alone []*Completion
	for _, r := range reqs {
		alone = append(alone, generateAlone(t, m, r))
	}
	if alone[0].Text == alone[1].Text {
		t.Fatalf("seeds 7 and 8 gave the same text %q: the seed is not used", alone[0].Text)
	}
	e, closeAll := openEngine(t, m, 256, 2, engineParams(4, 8))
	defer closeAll()
	var ids []uint64
	for _, r := range reqs {
		id, err := e.SubmitRequest(context.Background(), r, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		got, err := e.Result(id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != alone[i].Text || len(got.Tokens) != len(alone[i].Tokens) {
			t.Fatalf("request %d in the engine: %q, alone %q", i, got.Text, alone[i].Text)
		}
		if len(got.Logprobs) != len(alone[i].Logprobs) {
			t.Fatalf("request %d: %d logprobs in the engine, %d alone", i, len(got.Logprobs), len(alone[i].Logprobs))
		}
		for k := range got.Logprobs {
			if got.Logprobs[k].Chosen != alone[i].Logprobs[k].Chosen {
				t.Fatalf("request %d token %d: logprob %v in the engine, %v alone", i, k, got.Logprobs[k], alone[i].Logprobs[k])
			}
		}
	}
}

func TestLogprobsDescribeTheGeneratedTokens(t *testing.T) {
	_, c := openBoth(t)
	done, err := c.GenerateRequest(context.Background(), &Request{Prompt: "Once upon a time", MaxTokens: 12, Logprobs: true, TopLogprobs: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(done.Logprobs) != done.CompletionTokens || done.CompletionTokens == 0 {
		t.Fatalf("%d logprobs for %d tokens", len(done.Logprobs), done.CompletionTokens)
	}
	for i, lp := range done.Logprobs {
		if lp.Chosen.Token != done.Tokens[i] || lp.Chosen.Logprob > 0 || len(lp.Top) != 3 {
			t.Fatalf("token %d (%d): %+v", i, done.Tokens[i], lp)
		}
		// Greedy: the chosen token is the most likely one, and the alternatives come best first.
		if lp.Top[0] != lp.Chosen || lp.Top[1].Logprob > lp.Top[0].Logprob || lp.Top[2].Logprob > lp.Top[1].Logprob {
			t.Fatalf("token %d: chosen %+v, top %+v", i, lp.Chosen, lp.Top)
		}
	}
	plain, err := c.Generate(context.Background(), "Once upon a time", 12, nil)
	if err != nil || plain.Text != done.Text || plain.Logprobs != nil {
		t.Fatalf("without logprobs: %q %v (%v), with: %q", plain.Text, plain.Logprobs, err, done.Text)
	}
}

func TestAStopStringEndsTheCompletionBeforeIt(t *testing.T) {
	_, c := openBoth(t)
	full, err := c.Generate(context.Background(), "Once upon a time", 48, nil)
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(full.Text)
	if len(words) < 6 {
		t.Fatalf("too short to pick a stop word from: %q", full.Text)
	}
	stop := " " + words[4]
	at := strings.Index(full.Text, stop)
	done, err := c.GenerateRequest(context.Background(), &Request{Prompt: "Once upon a time", MaxTokens: 48, Stop: []string{"never appears", stop}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if done.FinishReason != FinishStop || done.Text != full.Text[:at] {
		t.Fatalf("stop %q: %q (%v), want %q", stop, done.Text, done.FinishReason, full.Text[:at])
	}
	// The library reads a stop string up to its first NUL: " x\x00..." would stop at " x".
	var e *Error
	_, err = c.GenerateRequest(context.Background(), &Request{Prompt: "Once upon a time", MaxTokens: 48,
		Stop: []string{stop[:2] + "\x00never"}}, nil)
	if !errors.As(err, &e) || e.Status != InvalidArgument || !strings.Contains(e.Message, "NUL") {
		t.Fatalf("a NUL in a stop string: %v", err)
	}
}

func TestAJSONSchemaShapesTheOutput(t *testing.T) {
	_, c := openBoth(t)
	// The test model's 2,048-token vocabulary has no "{" or "[": strings and numbers are what it can
	// write (the library's own tests cover objects and arrays on larger vocabularies).
	for _, seed := range []uint64{1, 2, 3} {
		r := sampled("Once upon a time", seed)
		r.MaxTokens, r.JSONSchema = 100, `{"type": "string", "minLength": 3, "maxLength": 12}`
		done, err := c.GenerateRequest(context.Background(), r, nil)
		if err != nil {
			t.Fatal(err)
		}
		var text string
		if err := json.Unmarshal([]byte(done.Text), &text); err != nil || len([]rune(text)) < 3 || len([]rune(text)) > 12 || done.FinishReason != FinishEOS {
			t.Fatalf("seed %d: %q (%v) is not a string of 3-12 characters: %v", seed, done.Text, done.FinishReason, err)
		}
		r.JSONSchema = `{"type": "integer", "minimum": 10, "maximum": 99}`
		if done, err = c.GenerateRequest(context.Background(), r, nil); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := json.Unmarshal([]byte(done.Text), &n); err != nil || n < 10 || n > 99 || done.FinishReason != FinishEOS {
			t.Fatalf("seed %d: %q (%v) is not an integer in [10, 99]: %v", seed, done.Text, done.FinishReason, err)
		}
	}
	_, err := c.GenerateRequest(context.Background(), &Request{Prompt: "Hi", Grammar: "root ::= (\"a\""}, nil)
	var e *Error
	if !errors.As(err, &e) || e.Status != InvalidArgument || e.Message == "" {
		t.Fatalf("an unterminated grammar: %v", err)
	}
}

func TestAReusedPrefixIsNotEvaluatedAgain(t *testing.T) {
	m, err := Open(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p := DefaultEngineParams()
	if !p.PrefixReuse || p.MaxSequences == 0 {
		t.Fatalf("defaults: %+v", p)
	}
	p.MaxSequences, p.RetainedSequences = 2, 2
	e, closeAll := openEngine(t, m, 512, 1, p)
	defer closeAll()
	prompt := "Once upon a time there was a little girl named Lily. She liked to play outside in the park " +
		"with her friends. One day she found a big red ball under a tree and she was very happy"
	var results []*Completion
	for _, tail := range []string{" with her dog.", " in the sun."} {
		id, err := e.Submit(context.Background(), prompt+tail, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		got, err := e.Result(id)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, got)
		if err := e.Release(id); err != nil {
			t.Fatal(err)
		}
	}
	if results[0].ReusedTokens != 0 || results[1].ReusedTokens < 10 || results[1].ReusedTokens >= results[1].PromptTokens {
		t.Fatalf("reused %d of %d, then %d of %d prompt tokens", results[0].ReusedTokens, results[0].PromptTokens,
			results[1].ReusedTokens, results[1].PromptTokens)
	}
	st, err := e.Stats()
	if err != nil || st.MaxSequences != 2 || st.Running != 0 || st.Queued != 0 || st.Cached == 0 || st.CellsUsed == 0 {
		t.Fatalf("stats %+v (%v)", st, err)
	}
	p.PrefixReuse = false
	e2, closeAll2 := openEngine(t, m, 512, 1, p)
	defer closeAll2()
	for i := 0; i < 2; i++ {
		id, err := e2.Submit(context.Background(), prompt+" with her dog.", 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := e2.Run(); err != nil {
			t.Fatal(err)
		}
		if got, err := e2.Result(id); err != nil || got.ReusedTokens != 0 || got.Text != results[0].Text {
			t.Fatalf("without reuse, run %d: %+v (%v)", i, got, err)
		}
		e2.Release(id)
	}
}
