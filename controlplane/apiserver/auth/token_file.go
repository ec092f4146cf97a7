package auth

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// TokenFile authenticates the static tokens of kube-apiserver's
// --token-auth-file: a CSV file of token,user,uid and an optional quoted,
// comma-separated list of groups.
type TokenFile struct {
	// users maps the SHA-256 of each token to its user, so that no token is
	// kept in memory in the clear.
	users map[[sha256.Size]byte]User
}

// LoadTokenFile reads a Kubernetes static token file.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to open token file %q: %w", path, err)
	}
	defer f.Close()
	tf, err := ParseTokenFile(f)
	if err != nil {
		return nil, fmt.Errorf("failed to read token file %q: %w", path, err)
	}
	return tf, nil
}

// ParseTokenFile parses the CSV of a static token file. Records with an
// empty token are skipped; a later record for the same token wins.
func ParseTokenFile(r io.Reader) (*TokenFile, error) {
	reader := csv.NewReader(r)
	reader.FieldsPerRecord = -1
	reader.TrimLeadingSpace = true
	tf := &TokenFile{users: map[[sha256.Size]byte]User{}}
	for line := 1; ; line++ {
		record, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return tf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(record) < 3 {
			return nil, fmt.Errorf("record %d must have at least 3 columns (token, user name, user uid), found %d", line, len(record))
		}
		if record[0] == "" {
			continue
		}
		if record[1] == "" {
			return nil, fmt.Errorf("record %d has an empty user name", line)
		}
		u := User{Name: record[1], UID: record[2], Authenticator: "token-file"}
		if len(record) >= 4 && record[3] != "" {
			u.Groups = strings.Split(record[3], ",")
		}
		tf.users[sha256.Sum256([]byte(record[0]))] = u
	}
}

// Len returns how many tokens the file holds.
func (f *TokenFile) Len() int { return len(f.users) }

// AuthenticateToken implements TokenAuthenticator.
func (f *TokenFile) AuthenticateToken(_ context.Context, token string) (*User, error) {
	u, ok := f.users[sha256.Sum256([]byte(token))]
	if !ok {
		return nil, ErrNoIdentity
	}
	return &u, nil
}
