package demo

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// statefulSet shows what a StatefulSet adds to a Deployment: pods made one
// at a time in ordinal order, and a stable name and hostname that a
// replaced pod gets back.
func statefulSet() Demo {
	const name = "web"
	replicas := int32(3)
	var uid types.UID
	var web1 types.UID
	return Demo{
		Name:  "stateful-set",
		Title: Text{"A StatefulSet: pods in order, with names that stay", "StatefulSet: 순서대로 만들어지고 이름이 유지되는 Pod"},
		Steps: []Step{
			{Say: Text{
				"Create a headless Service (clusterIP: None) and a StatefulSet of 3 with serviceName web. The statefulset controller creates web-0 first and waits until it is Running and Ready before it creates web-1, then web-2 (podManagementPolicy OrderedReady). Each pod's hostname is its name, under the Service's subdomain.",
				"헤드리스 Service(clusterIP: None)와 serviceName이 web인 복제본 3개짜리 StatefulSet을 만듭니다. statefulset 컨트롤러는 web-0을 먼저 만들고, 그 Pod가 Running이고 Ready가 될 때까지 기다린 뒤 web-1, 그다음 web-2를 만듭니다(podManagementPolicy OrderedReady). 각 Pod의 hostname은 자기 이름이고, Service의 subdomain 아래에 있습니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				labels := map[string]string{"app": name, demoLabel: "stateful-set"}
				services := env.Client.CoreV1().Services(env.Namespace)
				svc, err := services.Create(ctx, &corev1.Service{ObjectMeta: meta(env, name, "stateful-set"), Spec: corev1.ServiceSpec{
					ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 80}},
				}}, metav1.CreateOptions{})
				if err != nil {
					return Text{}, err
				}
				env.remember("service", svc, services.Delete, metav1.DeleteOptions{})
				sets := env.Client.AppsV1().StatefulSets(env.Namespace)
				created, err := sets.Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta(env, name, "stateful-set"), Spec: appsv1.StatefulSetSpec{
					Replicas: &replicas, ServiceName: name,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{container(name)}},
					},
				}}, metav1.CreateOptions{})
				if err != nil {
					return Text{}, err
				}
				uid = created.UID
				env.remember("statefulset.apps", created, sets.Delete, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
				err = until(ctx, env, Text{"the StatefulSet's 3 pods to be Ready", "StatefulSet의 Pod 3개 준비"}, func(ctx context.Context) (bool, error) {
					s, err := sets.Get(ctx, name, metav1.GetOptions{})
					return err == nil && s.Status.ReadyReplicas == replicas, err
				})
				if err != nil {
					return Text{}, err
				}
				var pods []string
				for i := range replicas {
					p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, fmt.Sprintf("%s-%d", name, i), metav1.GetOptions{})
					if err != nil {
						return Text{}, err
					}
					if i == 1 {
						web1 = p.UID
					}
					pods = append(pods, fmt.Sprintf("%s (hostname %s.%s)", p.Name, p.Spec.Hostname, p.Spec.Subdomain))
				}
				return textf("statefulset.apps/%s: 3/3 ready, created in order: %s",
					"StatefulSet이 준비되었습니다: statefulset.apps/%s 3/3, 만들어진 순서: %s", name, strings.Join(pods, ", ")), nil
			}},
			{Say: Text{
				"Delete pod web-1. A Deployment would replace it with a pod of a new random name; the statefulset controller makes web-1 again: the same name, hostname and ordinal (label apps.kubernetes.io/pod-index=1), with a new uid.",
				"Pod web-1을 삭제합니다. Deployment라면 임의의 새 이름을 가진 Pod로 대체하겠지만, statefulset 컨트롤러는 web-1을 다시 만듭니다: 이름, hostname, 순번(라벨 apps.kubernetes.io/pod-index=1)은 같고 uid만 새것입니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				pods := env.Client.CoreV1().Pods(env.Namespace)
				if err := pods.Delete(ctx, name+"-1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &web1}}); err != nil {
					return Text{}, err
				}
				var again *corev1.Pod
				err := until(ctx, env, textf("pod %s-1 to be made again", "Pod %s-1 재생성", name), func(ctx context.Context) (bool, error) {
					p, err := pods.Get(ctx, name+"-1", metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						return false, nil
					}
					if err != nil {
						return false, err
					}
					again = p
					return p.UID != web1 && p.DeletionTimestamp == nil, nil
				})
				if err != nil {
					return Text{}, err
				}
				return textf("pod/%s made again: hostname %s, pod-index %s, uid %s (was %s)",
					"Pod를 다시 만들었습니다: pod/%s, hostname %s, pod-index %s, uid %s (이전 %s)",
					again.Name, again.Spec.Hostname, again.Labels[appsv1.PodIndexLabel], again.UID, web1), nil
			}},
			{Say: Text{
				"Delete the StatefulSet. The garbage collector follows the owner references and deletes its pods.",
				"StatefulSet을 삭제합니다. 가비지 컬렉터가 ownerReference를 따라 그 Pod들을 삭제합니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				if err := env.Client.AppsV1().StatefulSets(env.Namespace).Delete(ctx, name, metav1.DeleteOptions{
					PropagationPolicy: ptr.To(metav1.DeletePropagationBackground), Preconditions: &metav1.Preconditions{UID: &uid},
				}); err != nil {
					return Text{}, err
				}
				err := until(ctx, env, Text{"the StatefulSet's pods to be gone", "StatefulSet의 Pod 삭제"}, func(ctx context.Context) (bool, error) {
					pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
					return err == nil && len(pods.Items) == 0, err
				})
				if err != nil {
					return Text{}, err
				}
				return textf("statefulset.apps/%s deleted; its Pods followed",
					"StatefulSet을 삭제했고, 그 Pod도 뒤따라 삭제되었습니다: statefulset.apps/%s", name), nil
			}},
		},
	}
}
