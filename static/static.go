package static

import "embed"

// FS holds css/ and js/; paths are relative to this package ("css/app.css").
//
//go:embed css js
var FS embed.FS
