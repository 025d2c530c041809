// Command lmrt-stream-go streams a greedy completion; Ctrl-C cancels it through a context.
// usage: lmrt-stream-go MODEL [PROMPT] [MAX_TOKENS]
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"

	"lmrt.example/lmrt/lmrt"
)

func run() error {
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: %s MODEL [PROMPT] [MAX_TOKENS]", os.Args[0])
	}
	if _, err := lmrt.CheckLayout(); err != nil {
		return err
	}
	if err := lmrt.CheckABI(); err != nil {
		return err
	}
	prompt, maxTokens := "Once upon a time", 128
	if len(os.Args) > 2 {
		prompt = os.Args[2]
	}
	if len(os.Args) > 3 {
		n, err := strconv.Atoi(os.Args[3])
		if err != nil {
			return fmt.Errorf("MAX_TOKENS: %w", err)
		}
		maxTokens = n
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	model, err := lmrt.Open(os.Args[1])
	if err != nil {
		return err
	}
	defer model.Close()
	lc, err := model.NewContext(lmrt.ContextParams{NCtx: 256, NThreads: 2})
	if err != nil {
		return err
	}
	defer lc.Close()
	done, err := lc.Generate(ctx, prompt, maxTokens, func(piece string) error {
		_, err := os.Stdout.WriteString(piece)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Println()
	fmt.Fprintf(os.Stderr, "[%s: %d prompt + %d generated tokens]\n", done.FinishReason, done.PromptTokens, done.CompletionTokens)
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lmrt-stream-go:", err)
		os.Exit(1)
	}
}
