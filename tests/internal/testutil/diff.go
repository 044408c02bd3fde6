package testutil

import (
	"strings"
)

// Diff returns a line diff of want and got ("-" lines only in want, "+" lines only in got, two lines
// of context around each change), or "" when they are equal.
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	a := strings.Split(want, "\n")
	b := strings.Split(got, "\n")
	// Longest common subsequence table; transcripts are a few hundred lines at most.
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			lines = append(lines, line{' ', a[i]})
			i++
			j++
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			lines = append(lines, line{'+', b[j]})
			j++
		default:
			lines = append(lines, line{'-', a[i]})
			i++
		}
	}
	const context = 2
	keep := make([]bool, len(lines))
	for k, l := range lines {
		if l.op != ' ' {
			for d := max(0, k-context); d <= min(len(lines)-1, k+context); d++ {
				keep[d] = true
			}
		}
	}
	var sb strings.Builder
	gap := false
	for k, l := range lines {
		if !keep[k] {
			gap = true
			continue
		}
		if gap {
			sb.WriteString("   ...\n")
			gap = false
		}
		sb.WriteByte(l.op)
		sb.WriteString(" ")
		sb.WriteString(l.text)
		sb.WriteByte('\n')
	}
	return sb.String()
}
