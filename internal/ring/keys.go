// Ring keys of what is placed: chunks.
package ring

import "strconv"

// ChunkKey is the ring key of a chunk: every version of a chunk lives on
// the same owners, so a chunk's owners are known before its ETag is.
func ChunkKey(bucket, key string, index int64) []byte {
	b := make([]byte, 0, len(bucket)+len(key)+24)
	b = append(b, bucket...)
	b = append(b, 0)
	b = append(b, key...)
	b = append(b, 0)
	return strconv.AppendInt(b, index, 10)
}
