package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/goxio/goxio/offload/xdp"
	"github.com/goxio/goxio/offload/xdp/packet"
)

// doctorCmd implements `goxio doctor IFACE`: what the AF_XDP transport can do on an
// interface (in this network namespace). It tries for real, and undoes everything:
// XDP attach in native and in generic mode, AF_XDP bind in zero-copy and in copy mode
// on queue 0, need_wakeup and busy polling; it reports the queue counts, an XDP program
// already attached, and the capabilities that are missing. Exit status 0 when goxio
// can use AF_XDP on the interface, 1 when it cannot (or the interface does not exist),
// 2 for wrong usage.
func doctorCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(stderr, "usage: goxio doctor IFACE")
		return 2
	}
	name := args[0]
	nl, err := packet.Open()
	if err != nil {
		fmt.Fprintf(stderr, "goxio: doctor: netlink: %v\n", err)
		return 1
	}
	defer nl.Close()
	l, err := xdp.LinkByName(nl, name)
	if err != nil {
		fmt.Fprintf(stderr, "goxio: doctor: no interface %q in this network namespace: %v\n", name, err)
		return 1
	}
	fmt.Fprintf(stdout, "interface %s (index %d): %d receive queue(s), %d transmit queue(s)\n", l.Name, l.Index, l.RxQueues, l.TxQueues)

	missing, err := xdp.MissingCapabilities()
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "capabilities: cannot read: %v\n", err)
	case len(missing) == 0:
		fmt.Fprintln(stdout, "capabilities: CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF present")
	default:
		fmt.Fprintf(stdout, "capabilities: missing %s (goxio uses the kernel for this interface)\n", strings.Join(missing, ", "))
	}

	usable := true
	attachMode := ""
	if l.XDPMode != xdp.ModeNone {
		_, err := xdp.Attach(nl, l.Index, xdp.Options{})
		fmt.Fprintf(stdout, "xdp: %v\n", errOrBusy(err))
		usable = false
	} else {
		for _, m := range []xdp.Mode{xdp.ModeNative, xdp.ModeGeneric} {
			p, err := xdp.Attach(nl, l.Index, xdp.Options{Mode: m})
			if err != nil {
				fmt.Fprintf(stdout, "xdp %s attach: fails: %v\n", m, err)
				continue
			}
			fmt.Fprintf(stdout, "xdp %s attach: works\n", m)
			if attachMode == "" {
				attachMode = m.String()
			}
			if err := p.Close(); err != nil {
				fmt.Fprintf(stdout, "xdp %s detach: %v\n", m, err)
			}
		}
		if attachMode == "" {
			usable = false
		}
	}

	bindMode := ""
	for _, b := range []struct {
		mode xdp.BindMode
		name string
	}{{xdp.BindZeroCopy, "zero-copy"}, {xdp.BindCopy, "copy"}} {
		s, err := xdp.Open(l.Index, 0, xdp.Config{RxFrames: 64, TxFrames: 64, Mode: b.mode, BusyPollMicros: 20})
		if err != nil {
			fmt.Fprintf(stdout, "af_xdp %s bind (queue 0): fails: %v\n", b.name, err)
			continue
		}
		fmt.Fprintf(stdout, "af_xdp %s bind (queue 0): works; need_wakeup %s; busy poll %s\n",
			b.name, yesNo(s.NeedWakeup()), map[bool]string{true: "accepted", false: "refused"}[s.BusyPoll()])
		if bindMode == "" {
			bindMode = b.name
		}
		s.Close()
	}
	if bindMode == "" {
		usable = false
	}
	if usable {
		fmt.Fprintf(stdout, "verdict: goxio can offload UDP on %s: XDP in %s mode, AF_XDP in %s mode, one socket per queue (%d)\n",
			l.Name, attachMode, bindMode, max(l.RxQueues, 1))
		return 0
	}
	fmt.Fprintf(stdout, "verdict: goxio cannot use AF_XDP on %s; its traffic stays with the kernel\n", l.Name)
	return 1
}

// errOrBusy describes why Attach failed on an interface that already has a program.
func errOrBusy(err error) string {
	var be *xdp.BusyError
	if errors.As(err, &be) {
		return be.Error()
	}
	if err == nil {
		return "a program was attached while goxio looked"
	}
	return err.Error()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
