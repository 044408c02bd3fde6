// Command mangen writes the generated parts of goxio's man pages from the
// code that defines them, so the pages cannot drift from the library:
//
//	go run ./packaging/mangen -w packaging/man/libgoxio.7
//
// In libgoxio(7) it replaces the lines between
//
//	.\" BEGIN GENERATED PARAMETERS
//	.\" END GENERATED PARAMETERS
//
// with one entry per parameter of conf.ParamInfos (name, meaning, valid
// values, default) and the VMA_SPEC profiles of conf.SpecSettings. Without -w
// it prints the regenerated page on standard output. The test next to it
// fails when the committed page is not what mangen writes.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
)

func main() {
	write := flag.Bool("w", false, "rewrite the file in place instead of printing it")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: mangen [-w] packaging/man/libgoxio.7")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *write); err != nil {
		fmt.Fprintf(os.Stderr, "mangen: %v\n", err)
		os.Exit(1)
	}
}

func run(path string, write bool) error {
	page, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read page: %w", err)
	}
	out, err := regenerate(page)
	if err != nil {
		return fmt.Errorf("regenerate %s: %w", path, err)
	}
	if !write {
		_, err = os.Stdout.Write(out)
		return err
	}
	if bytes.Equal(out, page) {
		return nil
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("write page: %w", err)
	}
	return nil
}
