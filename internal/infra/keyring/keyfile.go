package keyring

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxKeyFile bounds what ReadKeyFile reads.
const maxKeyFile = 64 << 10

// ReadKeyFile parses the keys of the file at path (see [ParseKeys]). A
// file that group or others may read or write is refused: the key would be
// no better kept than the database.
func ReadKeyFile(path string) (*Keyring, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: key file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("keyring: key file %s is not a regular file", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("keyring: key file %s has mode %04o: group and others must have no access (chmod 600 %s)", path, perm, path)
	}
	if info.Size() > maxKeyFile {
		return nil, fmt.Errorf("keyring: key file %s is %d bytes, at most %d", path, info.Size(), maxKeyFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: key file: %w", err)
	}
	k, err := ParseKeys(string(b))
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return k, nil
}

// LoadOrCreateKeyFile reads the key file at path, or, when there is none,
// creates it with mode 0600 holding one fresh key. Two processes creating
// it at once agree on one key: the file is written under another name and
// linked into place, which fails for the second.
func LoadOrCreateKeyFile(path string) (k *Keyring, created bool, err error) {
	k, err = ReadKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, false, err
	}
	key := NewKey()
	if err := WriteKeyFile(path, []Key{key}, false); err != nil {
		if errors.Is(err, fs.ErrExist) {
			k, err = ReadKeyFile(path)
			return k, false, err
		}
		return nil, false, err
	}
	k, err = New(key)
	return k, true, err
}

// WriteKeyFile writes keys, the first one current, to the key file at path
// with mode 0600, atomically: readers see the old file or the new one. With
// replace false it fails with an error wrapping fs.ErrExist when the file
// exists.
func WriteKeyFile(path string, keys []Key, replace bool) error {
	var sb strings.Builder
	sb.WriteString("# aiusage secret key file: the keys that encrypt the secrets stored in the database.\n" +
		"# The first key seals; the others only open what they sealed. Keep this file with mode 0600,\n" +
		"# and back it up with the database: without it the stored secrets cannot be read.\n")
	for _, k := range keys {
		sb.WriteString(k.String())
		sb.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("keyring: key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file with mode 0600.
	if _, err := tmp.WriteString(sb.String()); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("keyring: key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("keyring: key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keyring: key file: %w", err)
	}
	if replace {
		err = os.Rename(tmp.Name(), path)
	} else {
		err = os.Link(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("keyring: key file: %w", err)
	}
	return nil
}
