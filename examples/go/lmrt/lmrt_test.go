package lmrt

import (
	"context"
	"errors"
	"os"
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

func TestEveryPublicStructHasTheReleasedLayout(t *testing.T) {
	n, err := CheckLayout()
	if err != nil {
		t.Fatal(err)
	}
	if n != 67 {
		t.Fatalf("checked %d fields, want 67", n)
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
		c, err := m.NewContext(ContextParams{NCtx: 256, NThreads: 1})
		if err != nil {
			t.Fatal(err)
		}
		done, err := c.Generate(context.Background(), p, lengths[i], nil)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		alone = append(alone, done)
	}
	c, err := m.NewContext(ContextParams{NCtx: 256, NThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := c.NewEngine(4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
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

func TestAStartedEngineServesGoroutines(t *testing.T) {
	m, err := Open(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompts := []string{"Once upon a time", "The little dog", "Lily", "Tom"}
	var alone []*Completion
	for _, p := range prompts {
		c, err := m.NewContext(ContextParams{NCtx: 256, NThreads: 1})
		if err != nil {
			t.Fatal(err)
		}
		done, err := c.Generate(context.Background(), p, 24, nil)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		alone = append(alone, done)
	}
	c, err := m.NewContext(ContextParams{NCtx: 512, NThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := c.NewEngine(2, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
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
