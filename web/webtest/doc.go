// Package webtest holds the chromedp helpers the dashboard's browser tests
// share: start Debian's headless chromium with a fresh profile, wait for a
// selector or a JavaScript condition with a generous deadline, and save
// screenshots to $GLASSPLANE_TEST_OUTPUT. It is for tests only; the
// integrator's full-system browser test uses it too.
package webtest
