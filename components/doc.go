// Package components holds the dashboard's templ components: the page layout,
// the overview (nodes with their pods, the feed of recent steps), the apply
// form, an object's timeline and the etcd key explorer. Each component is a
// pure function of the view model declared in viewmodel.go; package web fills
// the view models from the store and the audit ring. Every value is rendered
// through templ's escaping, and key elements carry data-testid attributes for
// tests and the browser scripts in package static.
package components
