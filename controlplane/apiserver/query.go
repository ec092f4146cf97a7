package apiserver

import (
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// decodeQuery decodes the request's query parameters into opts (a
// metav1.ListOptions, GetOptions or DeleteOptions) with apimachinery's
// parameter codec, as kube-apiserver's handlers do: booleans are false only
// when absent, "0" or "false" in any case, and a number that does not parse
// is a 400 with strconv's message.
func decodeQuery(query url.Values, opts runtime.Object) error {
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(query, metav1.SchemeGroupVersion, opts); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// listOptions is the request's query as metav1.ListOptions, decoded once.
func (q *request) listOptions() (*metav1.ListOptions, error) {
	if q.listOpts == nil {
		opts := &metav1.ListOptions{}
		if err := decodeQuery(q.r.URL.Query(), opts); err != nil {
			return nil, err
		}
		q.listOpts = opts
	}
	return q.listOpts, nil
}

// queryBool reads a boolean query parameter as the parameter codec does.
func queryBool(query url.Values, name string) bool {
	v, ok := query[name]
	return ok && len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
}
