package serviceaccount

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

const caPEM = "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, err)
}

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func hasDefaults(client kubernetes.Interface, ns string) error {
	ctx := context.Background()
	if _, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, DefaultServiceAccountName, metav1.GetOptions{}); err != nil {
		return err
	}
	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, RootCAConfigMapName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if cm.Data[RootCAKey] != caPEM || cm.Annotations[DescriptionAnnotation] == "" {
		return fmt.Errorf("configmap %s/%s is %v %v", ns, cm.Name, cm.Data, cm.Annotations)
	}
	return nil
}

func start(t *testing.T, objs ...*corev1.Namespace) (*fake.Clientset, *Controller) {
	t.Helper()
	client := fake.NewClientset()
	for _, ns := range objs {
		if _, err := client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c := NewController(client, []byte(caPEM), slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return client, c
}

func TestControllerPublishesDefaultsBeforeReady(t *testing.T) {
	client, c := start(t, namespace("default", corev1.NamespaceActive), namespace("kube-system", corev1.NamespaceActive))
	select {
	case <-c.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the controller never became ready")
	}
	for _, ns := range []string{"default", "kube-system"} {
		if err := hasDefaults(client, ns); err != nil {
			t.Errorf("ready, but %s lacks its defaults: %v", ns, err)
		}
	}
}

func TestControllerRepairs(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		breakIt func(client kubernetes.Interface) error
	}{
		{"new namespace", func(client kubernetes.Interface) error {
			_, err := client.CoreV1().Namespaces().Create(ctx, namespace("team-a", corev1.NamespaceActive), metav1.CreateOptions{})
			return err
		}},
		{"default service account deleted", func(client kubernetes.Interface) error {
			return client.CoreV1().ServiceAccounts("default").Delete(ctx, DefaultServiceAccountName, metav1.DeleteOptions{})
		}},
		{"root CA configmap deleted", func(client kubernetes.Interface) error {
			return client.CoreV1().ConfigMaps("default").Delete(ctx, RootCAConfigMapName, metav1.DeleteOptions{})
		}},
		{"root CA configmap changed", func(client kubernetes.Interface) error {
			cm, err := client.CoreV1().ConfigMaps("default").Get(ctx, RootCAConfigMapName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cm.Data = map[string]string{RootCAKey: "forged", "extra": "x"}
			_, err = client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, c := start(t, namespace("default", corev1.NamespaceActive))
			<-c.Ready()
			if err := tc.breakIt(client); err != nil {
				t.Fatal(err)
			}
			eventually(t, "defaults restored", func() error {
				nss, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
				if err != nil {
					return err
				}
				for _, ns := range nss.Items {
					if err := hasDefaults(client, ns.Name); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	t.Run("terminating namespace left alone", func(t *testing.T) {
		client, c := start(t, namespace("default", corev1.NamespaceActive), namespace("leaving", corev1.NamespaceTerminating))
		<-c.Ready()
		_, err := client.CoreV1().ServiceAccounts("leaving").Get(ctx, DefaultServiceAccountName, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("service account in a terminating namespace: %v", err)
		}
	})
}
