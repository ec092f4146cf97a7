package dynamic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/labels"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
)

// A webhookCall is one AdmissionReview sent to a webhook, as the pipeline
// page shows it: how long it took and what came back.
type webhookCall struct {
	url     string
	took    time.Duration
	outcome string // allowed, denied: <message>, patched: <patch>, error: <err>
}

// callLog collects the webhook calls of one admission step; the plugins'
// HTTP requests carry it in their context.
type callLog struct {
	mu    sync.Mutex
	calls []webhookCall
}

type callLogKey struct{}

func withCallLog(ctx context.Context) (context.Context, *callLog) {
	l := &callLog{}
	return context.WithValue(ctx, callLogKey{}, l), l
}

// timedTransport records each webhook call in the request's callLog.
type timedTransport struct{ next http.RoundTripper }

func (t timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	l, _ := req.Context().Value(callLogKey{}).(*callLog)
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	if l == nil {
		return resp, err
	}
	c := webhookCall{url: req.URL.Scheme + "://" + req.URL.Host + req.URL.Path}
	switch {
	case err != nil:
		c.outcome = "error: " + err.Error()
	case resp.StatusCode != http.StatusOK:
		c.outcome = "error: " + resp.Status
	default:
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if rerr != nil {
			err = rerr
		}
		c.outcome = reviewOutcome(body)
	}
	c.took = time.Since(start)
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
	return resp, err
}

// reviewOutcome summarizes an AdmissionReview response.
func reviewOutcome(body []byte) string {
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Response == nil {
		return "error: the webhook's answer is not an AdmissionReview"
	}
	r := review.Response
	switch {
	case !r.Allowed:
		msg := ""
		if r.Result != nil {
			msg = r.Result.Message
		}
		return "denied: " + msg
	case len(r.Patch) > 0:
		return "patched: " + string(r.Patch)
	}
	return "allowed"
}

// timingResolver wraps the webhooks' client configurations with timedTransport.
func timingResolver(next webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver {
	wrap := func(cfg *rest.Config, err error) (*rest.Config, error) {
		if err != nil {
			return nil, err
		}
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return timedTransport{rt} })
		return cfg, nil
	}
	return &webhookutil.AuthenticationInfoResolverDelegator{
		ClientConfigForFunc: func(hostPort string) (*rest.Config, error) { return wrap(next.ClientConfigFor(hostPort)) },
		ClientConfigForServiceFunc: func(name, namespace string, port int) (*rest.Config, error) {
			return wrap(next.ClientConfigForService(name, namespace, port))
		},
	}
}

// webhookNames finds which webhook a call went to by its URL: the
// configurations' url, or the path of a Service reference.
type webhookNames struct {
	mutating   admissionlisters.MutatingWebhookConfigurationLister
	validating admissionlisters.ValidatingWebhookConfigurationLister
}

func (n webhookNames) name(mutating bool, url string) string {
	match := func(cc admissionregistrationv1.WebhookClientConfig) bool {
		if cc.URL != nil {
			return strings.TrimSuffix(*cc.URL, "/") == strings.TrimSuffix(url, "/")
		}
		return cc.Service != nil && cc.Service.Path != nil && strings.HasSuffix(url, *cc.Service.Path)
	}
	if mutating {
		configs, _ := n.mutating.List(labels.Everything())
		for _, c := range configs {
			for _, w := range c.Webhooks {
				if match(w.ClientConfig) {
					return w.Name
				}
			}
		}
	} else {
		configs, _ := n.validating.List(labels.Everything())
		for _, c := range configs {
			for _, w := range c.Webhooks {
				if match(w.ClientConfig) {
					return w.Name
				}
			}
		}
	}
	return url
}

// annotate adds one pipeline annotation per webhook call, under the chain's
// admission prefix, so the dashboard lists each call as a stage of
// admission: "<plugin>/<webhook>" = "<outcome> (<duration>)".
func (l *callLog) annotate(to map[string]string, plugin string, names func(url string) string) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) == 0 {
		return to
	}
	if to == nil {
		to = map[string]string{}
	}
	for _, c := range l.calls {
		key := audit.AnnotationAdmissionPrefix + plugin + "/" + names(c.url)
		if _, dup := to[key]; dup {
			key += fmt.Sprintf(" (%d)", len(to))
		}
		to[key] = fmt.Sprintf("%s (%s)", c.outcome, c.took.Round(100*time.Microsecond))
	}
	return to
}
