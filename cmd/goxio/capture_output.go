package main

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/goxio/goxio/offload/capture"
)

// Where captured packets go: one stream (-w FILE, -w -, or text lines on stdout), or one per
// source address, multicast group or socket (--split), each rotated by time (-G) or size (-C).

// capPacket is a record with the process it came from.
type capPacket struct {
	*capture.Record
	pid int
}

// outputs routes packets to their files.
type outputs struct {
	o      *captureOptions
	stdout io.Writer
	files  map[string]*output
	text   *bufio.Writer // no -w: one line per packet
	order  []string      // keys in creation order, for closing
}

func newOutputs(o *captureOptions, stdout io.Writer) *outputs {
	return &outputs{o: o, stdout: stdout, files: map[string]*output{}}
}

// start opens the one output file (not split) right away, as tcpdump does: a capture that
// matches nothing still leaves a valid file, and a reader of -w - gets the header at once.
func (w *outputs) start() error {
	if w.o.write == "" || w.o.split != "" {
		return nil
	}
	out := &output{o: w.o, stdout: w.stdout, base: w.o.write}
	w.files[""] = out
	w.order = append(w.order, "")
	if err := out.open(time.Now()); err != nil {
		return err
	}
	return out.flush()
}

// write writes one packet.
func (w *outputs) write(p capPacket) error {
	if w.o.write == "" {
		if w.text == nil {
			w.text = bufio.NewWriter(w.stdout)
		}
		_, err := fmt.Fprintln(w.text, describe(p))
		return err
	}
	key := ""
	if w.o.split != "" {
		key = splitKey(w.o.split, p)
	}
	out := w.files[key]
	if out == nil {
		out = &output{o: w.o, stdout: w.stdout, base: splitName(w.o.write, key)}
		w.files[key] = out
		w.order = append(w.order, key)
	}
	return out.write(p)
}

// flush writes out buffered packets (a reader of -w - sees them promptly).
func (w *outputs) flush() error {
	if w.text != nil {
		if err := w.text.Flush(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	for _, k := range w.order {
		if err := w.files[k].flush(); err != nil {
			return err
		}
	}
	return nil
}

// close flushes and closes every file.
func (w *outputs) close() error {
	err := w.flush()
	for _, k := range w.order {
		if e := w.files[k].close(); err == nil {
			err = e
		}
	}
	return err
}

// splitKey is the part of a file name --split gives a packet.
func splitKey(mode string, p capPacket) string {
	src, dst := addrs(p.Data)
	switch mode {
	case "src":
		if src.IsValid() {
			return src.String()
		}
	case "group":
		if dst.IsValid() && dst.IsMulticast() {
			return dst.String()
		}
		return "unicast"
	case "socket":
		return strconv.Itoa(p.pid) + "." + strconv.Itoa(p.FD)
	}
	return "other"
}

// splitName inserts key before the file name's extension: out.pcap, 10.0.0.1 -> out.10.0.0.1.pcap.
func splitName(name, key string) string {
	if key == "" {
		return name
	}
	ext := filepath.Ext(name)
	return strings.TrimSuffix(name, ext) + "." + key + ext
}

// addrs returns an Ethernet/IPv4 or Ethernet/IPv6 frame's addresses.
func addrs(frame []byte) (src, dst netip.Addr) {
	switch {
	case len(frame) >= capture.EthLen+capture.IPLen && frame[12] == 0x08 && frame[13] == 0:
		ip := frame[capture.EthLen:]
		return netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
	case len(frame) >= capture.EthLen+capture.IP6Len && frame[12] == 0x86 && frame[13] == 0xdd:
		ip := frame[capture.EthLen:]
		return netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
	}
	return
}

// describe is a packet's text line: time, process, socket, then what gopacket decodes.
func describe(p capPacket) string {
	ts := time.Unix(0, p.Time).Format("15:04:05.000000000")
	dir := "out"
	if p.Dir == capture.In {
		dir = "in"
	}
	pkt := gopacket.NewPacket(p.Data, layers.LayerTypeEthernet, gopacket.NoCopy)
	what := "length " + strconv.Itoa(p.OrigLen)
	if ip, ok := pkt.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
		switch l4 := pkt.TransportLayer().(type) {
		case *layers.UDP:
			what = fmt.Sprintf("IP6 %v.%d > %v.%d: UDP, length %d", ip.SrcIP, l4.SrcPort, ip.DstIP, l4.DstPort, int(l4.Length)-8)
		case *layers.TCP:
			what = fmt.Sprintf("IP6 %v.%d > %v.%d: TCP seq %d ack %d, length %d", ip.SrcIP, l4.SrcPort, ip.DstIP, l4.DstPort,
				l4.Seq, l4.Ack, int(ip.Length)-int(l4.DataOffset)*4)
		default:
			what = fmt.Sprintf("IP6 %v > %v: next header %d, length %d", ip.SrcIP, ip.DstIP, ip.NextHeader, ip.Length)
		}
	} else if ip, ok := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		switch l4 := pkt.TransportLayer().(type) {
		case *layers.UDP:
			what = fmt.Sprintf("IP %v.%d > %v.%d: UDP, length %d", ip.SrcIP, l4.SrcPort, ip.DstIP, l4.DstPort, int(l4.Length)-8)
		case *layers.TCP:
			what = fmt.Sprintf("IP %v.%d > %v.%d: TCP seq %d ack %d, length %d", ip.SrcIP, l4.SrcPort, ip.DstIP, l4.DstPort,
				l4.Seq, l4.Ack, int(ip.Length)-int(ip.IHL)*4-int(l4.DataOffset)*4)
		default:
			what = fmt.Sprintf("IP %v > %v: proto %d, length %d", ip.SrcIP, ip.DstIP, ip.Protocol, ip.Length)
		}
	}
	return fmt.Sprintf("%s pid %d fd %d %s %s %s", ts, p.pid, p.FD, capture.TransportName(p.Transport), dir, what)
}

// output is one file name's files: the current one and its rotation.
type output struct {
	o      *captureOptions
	stdout io.Writer
	base   string
	n      int // files opened so far
	f      *os.File
	buf    *bufio.Writer
	pcap   *pcapgo.Writer
	ng     *pcapgo.NgWriter
	ifaces map[[2]int]int // (pid, transport) -> pcapng interface
	opened time.Time
	size   int64
}

// write writes a packet, opening or rotating the file first when due.
func (w *output) write(p capPacket) error {
	now := time.Unix(0, p.Time)
	if w.buf != nil && w.base != "-" && (w.o.rotateSecs > 0 && now.Sub(w.opened) >= time.Duration(w.o.rotateSecs)*time.Second ||
		w.o.rotateMB > 0 && w.size >= int64(w.o.rotateMB)*1_000_000) {
		if err := w.close(); err != nil {
			return err
		}
	}
	if w.buf == nil {
		if err := w.open(now); err != nil {
			return err
		}
	}
	ci := gopacket.CaptureInfo{Timestamp: now, CaptureLength: len(p.Data), Length: p.OrigLen}
	w.size += int64(16 + len(p.Data))
	if w.ng == nil {
		if err := w.pcap.WritePacket(ci, p.Data); err != nil {
			return fmt.Errorf("write %s: %w", w.name(), err)
		}
		return nil
	}
	id, err := w.iface(p.pid, p.Transport)
	if err != nil {
		return err
	}
	ci.InterfaceIndex = id
	dir := "out"
	if p.Dir == capture.In {
		dir = "in"
	}
	opts := pcapgo.NgPacketOptions{Comments: []string{fmt.Sprintf("pid=%d fd=%d transport=%s dir=%s", p.pid, p.FD, capture.TransportName(p.Transport), dir)}}
	if err := w.ng.WritePacketWithOptions(ci, p.Data, opts); err != nil {
		return fmt.Errorf("write %s: %w", w.name(), err)
	}
	return nil
}

// name is the current file's name: the base, then base.1, base.2... as it rotates.
func (w *output) name() string {
	if w.n <= 1 {
		return w.base
	}
	return w.base + "." + strconv.Itoa(w.n-1)
}

func (w *output) open(now time.Time) error {
	w.n++
	w.opened, w.size = now, 0
	var dst io.Writer = w.stdout
	if w.base != "-" {
		f, err := os.OpenFile(w.name(), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("open output: %w", err)
		}
		w.f, dst = f, f
	}
	w.buf = bufio.NewWriterSize(dst, 1<<16)
	snap := uint32(w.o.snapLen())
	if !w.o.pcapng {
		w.pcap = pcapgo.NewWriterNanos(w.buf)
		if err := w.pcap.WriteFileHeader(snap, layers.LinkTypeEthernet); err != nil {
			return fmt.Errorf("write %s: %w", w.name(), err)
		}
		return nil
	}
	w.ifaces = map[[2]int]int{}
	ng, err := pcapgo.NewNgWriterInterface(w.buf, pcapgo.NgInterface{
		Name: "goxio", Description: "goxio capture", Filter: w.o.filter, LinkType: layers.LinkTypeEthernet, SnapLength: snap,
	}, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "goxio capture"}})
	if err != nil {
		return fmt.Errorf("write %s: %w", w.name(), err)
	}
	w.ng = ng
	return nil
}

// iface returns the pcapng interface of a process's transport, adding it at first use.
func (w *output) iface(pid int, transport uint8) (int, error) {
	k := [2]int{pid, int(transport)}
	if id, ok := w.ifaces[k]; ok {
		return id, nil
	}
	id, err := w.ng.AddInterface(pcapgo.NgInterface{
		Name:        fmt.Sprintf("goxio-%d-%s", pid, capture.TransportName(transport)),
		Description: fmt.Sprintf("process %d, %s transport", pid, capture.TransportName(transport)),
		Filter:      w.o.filter, LinkType: layers.LinkTypeEthernet, SnapLength: uint32(w.o.snapLen()),
	})
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", w.name(), err)
	}
	w.ifaces[k] = id
	return id, nil
}

func (w *output) flush() error {
	if w.buf == nil {
		return nil
	}
	if w.ng != nil {
		if err := w.ng.Flush(); err != nil {
			return fmt.Errorf("write %s: %w", w.name(), err)
		}
	}
	if err := w.buf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.name(), err)
	}
	return nil
}

func (w *output) close() error {
	err := w.flush()
	if w.f != nil {
		if e := w.f.Close(); err == nil && e != nil {
			err = fmt.Errorf("close %s: %w", w.name(), e)
		}
	}
	w.f, w.buf, w.pcap, w.ng = nil, nil, nil, nil
	return err
}
