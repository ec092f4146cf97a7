package apiserver

import "time"

// SetBookmarkInterval changes how often watches send bookmarks and returns
// a function that restores the default.
func SetBookmarkInterval(d time.Duration) (restore func()) {
	old := bookmarkInterval.Swap(int64(d))
	return func() { bookmarkInterval.Store(old) }
}
