package localdynamo

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// scripts are the server (localdynamo.py) and its patches (the ldpatch
// package, one module per concern), run by python from a directory.
//
//go:embed localdynamo.py ldpatch/*.py
var scripts embed.FS

// writeScripts puts the embedded server where python can run it, once per
// version of the files, and returns the path of its main script. The
// directory appears whole or not at all: it is written under a temporary
// name and renamed.
func writeScripts() (string, error) {
	files, sum, err := embedded()
	if err != nil {
		return "", fmt.Errorf("localdynamo: read embedded server: %w", err)
	}
	dir := filepath.Join(os.TempDir(), "localdynamo-"+sum)
	main := filepath.Join(dir, "localdynamo.py")
	if sameFiles(dir, files) {
		return main, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "localdynamo-tmp-*")
	if err != nil {
		return "", fmt.Errorf("localdynamo: write server scripts: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; a leftover otherwise
	for name, b := range files {
		path := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("localdynamo: write server scripts: %w", err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return "", fmt.Errorf("localdynamo: write server scripts: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process renamed its copy first, or a damaged copy is in
		// the way: use the first, replace the second.
		if sameFiles(dir, files) {
			return main, nil
		}
		if rerr := os.RemoveAll(dir); rerr != nil {
			return "", fmt.Errorf("localdynamo: write server scripts: %w", errors.Join(err, rerr))
		}
		if err := os.Rename(tmp, dir); err != nil {
			return "", fmt.Errorf("localdynamo: write server scripts: %w", err)
		}
	}
	return main, nil
}

// embedded returns the embedded files by slash-separated path and a digest
// of their names and contents.
func embedded() (map[string][]byte, string, error) {
	files := map[string][]byte{}
	h := sha256.New()
	err := fs.WalkDir(scripts, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := scripts.ReadFile(path)
		if err != nil {
			return err
		}
		files[path] = b
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b)) // WalkDir's order is lexical: the digest is stable
		h.Write(b)
		return nil
	})
	return files, hex.EncodeToString(h.Sum(nil)[:6]), err
}

// sameFiles reports whether dir holds files as they are (python's caches
// beside them do not count).
func sameFiles(dir string, files map[string][]byte) bool {
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			return false
		}
	}
	return true
}
