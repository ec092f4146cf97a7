package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
)

const (
	// defaultDataDir is where `glassplane up` keeps its state unless
	// --data-dir or $GLASSPLANE_DATA_DIR says otherwise: relative to the
	// directory it runs in, as `make up` runs it from the repository root.
	defaultDataDir = "./glassplane-data"
	// dataDirEnv names the data directory for every command with --data-dir.
	dataDirEnv = "GLASSPLANE_DATA_DIR"
)

// addDataDirFlag adds --data-dir to f, defaulting to $GLASSPLANE_DATA_DIR
// when set and to ./glassplane-data otherwise, so that every command finds
// the directory `glassplane up` chose the same way.
func addDataDirFlag(f *pflag.FlagSet, p *string, usage string) {
	def := defaultDataDir
	if v := os.Getenv(dataDirEnv); v != "" {
		def = v
	}
	f.StringVar(p, "data-dir", def, usage+" ($"+dataDirEnv+" when set)")
}

// existingDataDir returns dir as an absolute path if it is a directory,
// and otherwise an error naming the path it tried and how to name another.
func existingDataDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("failed to resolve data directory %q: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("no Glassplane data directory at %s: run this where \"glassplane up\" ran, or name its data directory with --data-dir or $%s", abs, dataDirEnv)
	}
	if err != nil {
		return "", fmt.Errorf("failed to read data directory %q: %w", abs, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("data directory %s is not a directory", abs)
	}
	return abs, nil
}
