// Package blocks is the block store shared by the test namenode and
// datanode (internal/hdfstest): each HDFS block is one file, blk_<id>, in
// a directory. The namenode allocates block IDs; the datanode writes a
// block to a temporary file and renames it into place once the client's
// last packet is acknowledged, so a block file is always whole.
package blocks

import (
	"fmt"
	"os"
	"path/filepath"
)

// Store is a directory of block files.
type Store struct {
	Dir string
}

// Open returns the store in dir, creating dir if needed.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("blocks: %w", err)
	}
	return &Store{Dir: dir}, nil
}

// Path is the file of a finalized block.
func (s *Store) Path(id uint64) string {
	return filepath.Join(s.Dir, fmt.Sprintf("blk_%d", id))
}

// TempPath is the file a block is written to before it is finalized.
func (s *Store) TempPath(id uint64) string {
	return filepath.Join(s.Dir, fmt.Sprintf(".blk_%d.tmp", id))
}

// Len returns the length of a finalized block, or an error if there is
// none.
func (s *Store) Len(id uint64) (int64, error) {
	st, err := os.Stat(s.Path(id))
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
