package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"idemlab/studentloop"
)

func init() {
	register(command{name: "docs", summary: "a stage's lesson in the terminal", run: runDocs})
}

func runDocs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab docs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lang := fs.String("lang", "en", "the lesson's language: en, or the name of a folder under docs/lessons")
	plain := fs.Bool("plain", false, "print the markdown as it is, even on a terminal")
	width := fs.Int("width", 100, "wrap the rendered lesson at this many columns")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab docs [N] [--lang en|ja] [--plain]   (lab docs 3 | less -R to page)")
		fs.PrintDefaults()
	}
	if done, err := parseFlags(fs, reorder(args)); done {
		return err
	}
	root, err := findRoot()
	if err != nil {
		return err
	}
	p, err := studentloop.LoadProgress(root)
	if err != nil {
		return err
	}
	n, err := stageArg(fs.Args(), p)
	if err != nil {
		return err
	}
	path, err := studentloop.LessonPath(root, n, *lang)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return err
	}
	if *plain || !isTerminal(stdout) {
		_, err = stdout.Write(raw)
		return err
	}
	out, err := studentloop.RenderLesson(raw, *width)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, out)
	return err
}
