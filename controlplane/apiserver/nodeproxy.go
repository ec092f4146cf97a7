package apiserver

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// nodes/<name>/proxy/<path> is answered by the node's agent at /<path>,
// as kube-apiserver proxies it to the kubelet (RBAC: get on nodes/proxy).
// The dashboard reads the service proxy's rules through it
// (/glassplane/proxy-rules).

func nodeProxySubresource() *subresource {
	return &subresource{Name: "proxy", Kind: corev1.SchemeGroupVersion.WithKind("NodeProxyOptions"), Verbs: []string{"get"}, connect: (*request).proxyNode, path: true}
}

// proxyNode serves GET nodes/<name>/proxy/<path>.
func (q *request) proxyNode() error {
	if q.info.Verb != "get" {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "nodes/proxy"}, q.info.Verb)
	}
	obj, err := q.s.getFromStore(q.ctx, q.res, "", q.info.Name)
	if err != nil {
		return err
	}
	q.setObjectRef(obj)
	path := "/" + strings.Join(q.info.Parts[3:], "/")
	return q.forwardToNode(obj.(*corev1.Node), path, q.r.URL.Query())
}
