// Package rawjson takes JSON documents apart without decoding them: it
// splits an object into its members' raw values and an array into its
// elements' with one scan, for code that looks at only some parts of a
// document and copies the rest as bytes (the API server's merge patches,
// admission's JSON patches).
//
// The splitters trust their input to be valid JSON, as a stored object or
// a validated request body is; they report malformed input as an error
// but do not promise to find every defect.
package rawjson
