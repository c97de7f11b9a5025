package fsquota

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// maxReservedBytes bounds what is read of each file naming project IDs.
const maxReservedBytes = 1 << 20

// reservedIDs reads the project IDs the files name: /etc/projid
// ("name:id") and /etc/projects ("id:directory"), as the kubelet's
// project.go avoids them. A missing file names none; a line that is not
// one of these forms (a comment) is skipped; a file larger than
// maxReservedBytes is an error (nothing is allocated past a file not read).
func reservedIDs(files []string) (map[uint32]bool, error) {
	out := map[uint32]bool{}
	for _, path := range files {
		if err := readReserved(path, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readReserved(path string, out map[uint32]bool) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("project IDs in use: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReservedBytes+1))
	if err != nil {
		return fmt.Errorf("project IDs in use: %s: %w", path, err)
	}
	if len(data) > maxReservedBytes {
		return fmt.Errorf("project IDs in use: %s is larger than %d bytes", path, maxReservedBytes)
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, maxReservedBytes+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, b, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, field := range []string{a, b} { // projid: name:id; projects: id:dir; a numeric name counts too
			if id, err := strconv.ParseUint(field, 10, 32); err == nil {
				out[uint32(id)] = true
			}
		}
	}
	return sc.Err()
}
