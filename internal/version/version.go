// Package version holds the name and version of goxio, shared by the library
// (start-up banner, stats segment) and the command-line tools.
package version

// Name is the product name printed in banners and by `goxio version`.
const Name = "goxio"

// Version is the release version. The Makefile sets it at link time with
// -ldflags "-X github.com/goxio/goxio/internal/version.Version=...";
// an unstamped build reports the development version.
var Version = "0.1.0-dev"
