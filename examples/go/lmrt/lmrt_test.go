package lmrt

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
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
	if n != 59 {
		t.Fatalf("checked %d fields, want 59", n)
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
