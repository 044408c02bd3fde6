// Command stats_testprog is a stand-in for a program under libgoxio.so in
// the stats tests: it publishes into a stats segment with the stats.Writer
// directly and takes orders on stdin, one per line:
//
//	count FD N      count N received datagrams (100 bytes) and N sent ones on FD
//	osrx FD N       count N datagrams received through the kernel on FD
//	open FD         open a slot for FD (UDP, shm transport)
//	tcp FD          open a slot for FD (TCP, established, kernel by rule)
//	close FD        close FD's slot
//	join FD GROUP   FD joins a multicast group
//	churn N         open and close N sockets with self-checking metadata
//	exit            close the writer and exit 0
//
// It answers "ok" after each order (after "ready PID" at start), waits for
// reader commands on the segment's futex and prints "cmd KIND ARG1 ARG2" for
// each one it ran. With -crash it exits without closing the writer (a killed process).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goxio/goxio/stats"
)

type handler struct{ mu *sync.Mutex }

func (h handler) SetLogLevel(level int) { h.say("cmd loglevel %d", level) }
func (h handler) SetLogDetails(n int)   { h.say("cmd details %d", n) }
func (h handler) DumpFD(fd, level int)  { h.say("cmd dump %d %d", fd, level) }
func (h handler) say(f string, a ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Printf(f+"\n", a...)
}

// Churn sockets use fds from churnBase; their metadata is derived from the
// fd so that a reader can check a slot's consistency: inode = fd*7,
// local port = fd % 60000 + 1, rule = "churn <fd>", rule line = fd.
const churnBase = 100000

func main() {
	dir := flag.String("dir", os.TempDir(), "stats directory")
	slots := flag.Int("slots", 100, "socket slots")
	noPoll := flag.Bool("nopoll", false, "do not poll reader commands")
	crash := flag.Bool("crash", false, "exit without closing the writer on exit")
	flag.Parse()

	w, err := stats.Create(*dir, *slots, stats.ProcessInfo{Version: "testprog", AppID: "stats-test",
		Params: []stats.Param{{Name: "VMA_STATS_FD_NUM", Value: strconv.Itoa(*slots)}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "stats_testprog:", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	h := handler{&mu}
	if !*noPoll {
		// Like the engine: sleep on the command futex, run what was posted.
		go func() {
			for {
				w.CommandWait(time.Second)
				w.PollCommands(h)
			}
		}()
	}
	socks := map[int]*stats.Socket{}
	h.say("ready %d", os.Getpid())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		arg := func(i int) int {
			n, _ := strconv.Atoi(f[i])
			return n
		}
		switch f[0] {
		case "open":
			s := w.Open(arg(1))
			s.SetInfo(stats.SocketInfo{Family: 2, Type: 2, Protocol: 17, Inode: uint64(arg(1)) * 7, Blocking: true})
			s.SetLocal(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(5000+arg(1))))
			s.SetTransport(stats.TransportSHM, stats.ReasonNone)
			socks[arg(1)] = s
		case "tcp":
			s := w.Open(arg(1))
			s.SetInfo(stats.SocketInfo{Family: 2, Type: 1, Protocol: 6, Inode: 99})
			s.SetAddrs(netip.MustParseAddrPort("127.0.0.1:7000"), netip.MustParseAddrPort("127.0.0.1:40000"))
			s.SetState(stats.TCPEstablished)
			s.SetTransport(stats.TransportOS, stats.ReasonRule)
			s.SetRule(3, "use os tcp_client *:7000")
			socks[arg(1)] = s
		case "count":
			s := socks[arg(1)]
			for range arg(2) {
				s.CountRx(false, 100)
				s.CountTx(false, 100)
			}
		case "osrx":
			s := socks[arg(1)]
			for range arg(2) {
				s.CountRx(true, 100)
			}
		case "join":
			socks[arg(1)].JoinGroup(netip.MustParseAddr(f[2]))
		case "close":
			w.CloseSocket(socks[arg(1)])
			delete(socks, arg(1))
		case "churn":
			churn(w, arg(1))
		case "exit":
			if *crash {
				os.Exit(3)
			}
			if err := w.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "stats_testprog:", err)
				os.Exit(1)
			}
			h.say("ok")
			return
		}
		h.say("ok")
	}
}

// churn opens and closes n sockets, keeping up to 8 open at once.
func churn(w *stats.Writer, n int) {
	var open []*stats.Socket
	for i := range n {
		fd := churnBase + i
		s := w.Open(fd)
		s.SetInfo(stats.SocketInfo{Family: 2, Type: 2, Inode: uint64(fd) * 7})
		s.SetLocal(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(fd%60000+1)))
		s.SetRule(fd, "churn "+strconv.Itoa(fd))
		for range fd % 5 {
			s.CountRx(false, fd%1000)
		}
		open = append(open, s)
		if len(open) == 8 {
			w.CloseSocket(open[0])
			open = open[1:]
		}
	}
	for _, s := range open {
		w.CloseSocket(s)
	}
}
