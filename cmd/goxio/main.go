// Command goxio (built and installed as goxio-tool) helps with goxio's
// configuration. The goxio command users type is a small C front end
// (cmd/goxio-front) that serves run itself and execs this tool, with the same
// arguments, for every other command:
//
//	goxio run [-p PROFILE] [--lib PATH] -- command [args...]
//	goxio rules check [FILE]
//	goxio rules match --app NAME [--id ID] ROLE ADDR:PORT[:ADDR:PORT] [FILE]
//	goxio params [--env]
//	goxio doctor IFACE
//	goxio capture (-p PID | -n NAME | --all) [options] [FILTER]
//	goxio version
//	goxio help
//
// Messages about the command itself go to stderr, prefixed "goxio:". Exit
// status: 0 success, 1 a problem was found (bad rule lines, parameter
// warnings, no library), 2 wrong usage; `goxio run` replaces itself with the
// program, so the program's status is the command's.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/goxio/goxio/internal/version"
)

const usage = `usage:
  goxio run [-p PROFILE] [--lib PATH] -- COMMAND [ARG...]
        run COMMAND with libgoxio.so preloaded (and VMA_SPEC=PROFILE)
  goxio rules check [FILE]
        report every bad line of a libvma.conf file; exit 1 if there is one
  goxio rules match --app NAME [--id ID] ROLE ADDR:PORT[:ADDR:PORT] [FILE]
        show which rule decides for a socket, and whether it is offloaded
  goxio params [--env]
        list every parameter with its value, source, default and meaning
        (--env: only those that differ from the default, as NAME=VALUE)
  goxio doctor IFACE
        check whether XDP (native, generic) and AF_XDP (zero-copy, copy)
        work on a network interface, and which capabilities are missing
  goxio capture (-p PID... | -n NAME | --all) [OPTIONS] [FILTER]
        write the packets goxio's fast paths carry, as tcpdump would see
        them, to pcap or pcapng (goxio-capture(1); goxio capture -h)
  goxio version
  goxio help

FILE defaults to $GOXIO_CONFIG_FILE, $VMA_CONFIG_FILE or /etc/libvma.conf.
ROLE is tcp_server, tcp_client, udp_sender, udp_receiver or udp_connect.
For tcp_client and udp_connect give the remote address then, optionally,
the local one, as in libvma.conf; tcp_server and udp_receiver take the local
address, udp_sender the destination.
`

func main() {
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr, os.Environ()))
}

// cli runs one goxio command (all but run, which the C front end serves) and
// returns its exit status.
func cli(args []string, stdout, stderr io.Writer, environ []string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		// The front end (cmd/goxio-front, installed as goxio) serves run itself, in C, so that a
		// program's start does not pay a Go runtime's; this tool is only reached when it is
		// started by its own name.
		fmt.Fprintln(stderr, "goxio: run is served by the goxio command, not by goxio-tool: use goxio run")
		return 2
	case "rules":
		return rulesCmd(args[1:], stdout, stderr, environ)
	case "params":
		return paramsCmd(args[1:], stdout, stderr, environ)
	case "doctor":
		return doctorCmd(args[1:], stdout, stderr)
	case "capture":
		return captureCmd(args[1:], stdout, stderr, environ)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "%s %s (%s, %s/%s)\n", version.Name, version.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "goxio: unknown command %q\n%s", args[0], usage)
	return 2
}
