// File modes of what a node writes under its data directory.
package store

import "io/fs"

// Modes of every file and directory a node creates under its data
// directory (cached chunks, staged and spooled uploads, the write-back
// log and journal, copies kept for other members, indexes, catalogs,
// pins, credentials): the node's own, never readable by its group or
// others, whatever the umask allows. They hold other people's objects.
const (
	PrivateDirMode  fs.FileMode = 0o700
	PrivateFileMode fs.FileMode = 0o600
)
