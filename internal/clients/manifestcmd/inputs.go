package manifestcmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
)

// input is one manifest given with -f.
type input struct {
	name string // path as given, or "-" for stdin
	data []byte
}

// readInputs reads every -f argument: a file, a dir (its manifests, sorted,
// not recursive) or "-" (stdin, once). It reads all of them and returns every
// problem, one line each.
func readInputs(files []string, stdin io.Reader) ([]input, error) {
	if len(files) == 0 {
		return nil, errors.New("must specify -f FILE|DIR|-")
	}
	var out []input
	var errs []error
	usedStdin := false
	for _, f := range files {
		switch {
		case f == "-" && usedStdin:
			errs = append(errs, errors.New("-f -: stdin can only be given once"))
		case f == "-":
			usedStdin = true
			data, err := manifest.ReadLimited(stdin, "-", -1)
			out, errs = appendInput(out, errs, input{name: f, data: data}, err)
		default:
			ins, err := readPath(f)
			out = append(out, ins...)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return out, errors.Join(errs...)
}

func appendInput(out []input, errs []error, in input, err error) ([]input, []error) {
	if err != nil {
		return out, append(errs, err)
	}
	return append(out, in), errs
}

// readPath reads a file or the manifests of a dir.
func readPath(path string) ([]input, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, cmdutil.UnwrapPathError(err))
	}
	if !fi.IsDir() {
		data, err := readFile(path)
		if err != nil {
			return nil, err
		}
		return []input{{name: path, data: data}}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, cmdutil.UnwrapPathError(err))
	}
	var out []input
	var errs []error
	for _, e := range entries {
		if !source.IsManifestName(e.Name()) || e.IsDir() {
			continue
		}
		p := filepath.Join(path, e.Name())
		data, err := readFile(p)
		out, errs = appendInput(out, errs, input{name: p, data: data}, err)
	}
	if len(out) == 0 && len(errs) == 0 {
		return nil, fmt.Errorf("%s: no manifests (*.yaml, *.yml, *.json) in directory", path)
	}
	return out, errors.Join(errs...)
}

func readFile(path string) ([]byte, error) {
	data, _, err := manifest.ReadBytes(path)
	if err != nil {
		var el manifest.ErrorList
		if !errors.As(err, &el) {
			return nil, fmt.Errorf("%s: %w", path, cmdutil.UnwrapPathError(errors.Unwrap(err)))
		}
	}
	return data, err
}

// fileErr formats a one-line error about a whole input file.
func fileErr(name, format string, args ...any) error {
	return manifest.ErrorList{{File: manifest.DisplayName(name), Detail: fmt.Sprintf(format, args...)}}
}

// PodNames returns the names of the pods in namespace declared in the
// manifest dir (for shell completion); problems yield no names.
func PodNames(dir string, allowInsecure bool, namespace string) []string {
	snap, err := source.Scan(dir, allowInsecure)
	if err != nil {
		return nil
	}
	var names []string
	for _, p := range snap.Pods {
		if p.Namespace == namespace {
			names = append(names, p.Name)
		}
	}
	return names
}
