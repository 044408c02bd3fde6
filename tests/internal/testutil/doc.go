// Package testutil holds the helpers shared by goxio's acceptance tests: where the library and the
// tools are, how to run a program with and without the library under a time bound, how to pick a
// free loopback port and how to compile a small C program.
//
// Every helper that can fail takes a testing.TB and fails the test with a clear message: a missing
// library or program is a test failure, never a silent skip.
package testutil
