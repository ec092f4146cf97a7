// Package helper holds small functions several plugins share: score
// normalization and taint/toleration matching. It depends only on the
// framework and the core API types.
package helper
