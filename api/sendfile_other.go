//go:build !linux

// Bodies from files elsewhere than Linux: never; they are copied.
package api

import "errors"

// fileSends is SendFile's working memory on Linux.
type fileSends struct{}

// SendFile is not done here (membody.FileSender).
func (c *trackedConn) SendFile(fd uintptr, off int64, n int) (int64, error) {
	return 0, errors.ErrUnsupported
}
