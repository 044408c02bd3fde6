package sysc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The engine reaches the kernel through this package only, in the manner of cilium/ebpf's
// depguard rule: a package of the offload tree may import golang.org/x/sys/unix only when it is
// listed here; the engine's own packages (engineOnly) may use its constants, types and pure
// helpers but call no system call through it.
var (
	// unixAllowed are the packages that call the kernel through x/sys/unix themselves: this
	// package, and the transports and ring libraries, whose system calls are their own business.
	unixAllowed = []string{
		"offload/internal/sysc",
		"offload/internal/umem",
		"offload/capture",
		"offload/discovery",
		"offload/shm",
		"offload/transport/shm",
		"offload/transport/shmtcp",
		"offload/transport/transporttest",
		"offload/transport/udpcall",
		"offload/transport/xdp",
		"offload/xdp",
		"offload/xdp/packet",
	}
	// engineOnly are the engine's packages: unix for names only, the kernel through sysc.
	engineOnly = []string{
		"offload",
		"offload/iomux",
		"offload/internal/wait",
		"offload/transport",
		"offload/transport/kernel",
	}
	// pureUnix are the x/sys/unix functions that make no system call.
	pureUnix = []string{"NsecToTimespec", "NsecToTimeval", "ParseDirent", "Errno", "Signal"}
)

func TestOnlySyscIsTheKernel(t *testing.T) {
	root, err := filepath.Abs("../../..") // the module's root
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(filepath.Join(root, "offload"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		name := unixName(f)
		if name == "" {
			return nil
		}
		checked++
		engine := slices.Contains(engineOnly, pkg)
		if !engine && !slices.Contains(unixAllowed, pkg) {
			t.Errorf("%s imports golang.org/x/sys/unix: go to the kernel through offload/internal/sysc, or list the package in unixAllowed with the reason", path)
			return nil
		}
		if !engine {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == name && !slices.Contains(pureUnix, sel.Sel.Name) {
				t.Errorf("%s: engine package %s calls unix.%s: use offload/internal/sysc", fset.Position(call.Pos()), pkg, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no file of the offload tree imports x/sys/unix: the walk looked in the wrong place")
	}
}

// unixName is the name f gives golang.org/x/sys/unix ("" when it does not import it).
func unixName(f *ast.File) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "golang.org/x/sys/unix" {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "unix"
		}
	}
	return ""
}
