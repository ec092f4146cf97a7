// Package webtest holds the chromedp helpers the dashboard's browser tests
// share: start Debian's headless chromium with a fresh profile (as root,
// without CAP_SYS_NICE, so it runs at a person's browser's priority and does
// not raise its own above the cluster's on a shared machine), wait for a
// selector or a JavaScript condition with a generous deadline, and save
// screenshots to $GLASSPLANE_TEST_OUTPUT. It is for tests only; the
// integrator's full-system browser test uses it too.
package webtest
