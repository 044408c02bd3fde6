package offload

import (
	"reflect"
	"testing"
)

func TestParseEpollFdinfo(t *testing.T) {
	in := []byte("pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\n" +
		"tfd:        5 events:       19 data:                5  pos:0 ino:2c13 sdev:8\n" +
		"tfd:       12 events: 80000001 data: ffffffffffffffff  pos:0 ino:2c14 sdev:8\n" +
		"tfd:       bad events: 1 data: 1\n" +
		"tfd: 7 events: zz data: 1\n")
	got := parseEpollFdinfo(in)
	want := []epollMember{{fd: 5, events: 0x19, data: 5}, {fd: 12, events: 0x80000001, data: ^uint64(0)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseEpollFdinfo = %+v, want %+v", got, want)
	}
	if m := parseEpollFdinfo(nil); m != nil {
		t.Fatalf("empty fdinfo: %+v", m)
	}
}
