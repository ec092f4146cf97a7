// Package static holds the dashboard's browser assets: the stylesheet in
// css/ and plain ES modules in js/ (no build step), embedded into the binary
// with embed.FS and served under /static/ by package web. The scripts build
// every element from data with textContent and createElement, never
// innerHTML, so nothing a user named can run in the page. The one part
// a script takes as HTML is a Service page's panel (service.js), which it
// fetches as the server rendered it through templ's escaping, parses with
// DOMParser (whose documents run no scripts) and swaps in whole.
package static
