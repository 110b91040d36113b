// A client-go program run against watchcache by tests/e2e/test_client_go.py:
// what a Go controller does on its first day, with Debian's client-go (built at test
// time, never vendored). Each step asserts what it saw and prints "ok <step>"; any
// failure prints "FAIL <step>: <why>" and exits 1. It uses, as operators do:
//
//   - a typed clientset speaking protobuf, and a shared informer on pods whose
//     reflector uses WatchList (KUBE_FEATURE_WatchListClient=true, set by the test);
//   - a metadata informer (PartialObjectMetadata) on ConfigMaps;
//   - server-side apply with apply configurations, and its conflict;
//   - a CustomResourceDefinition made through the dynamic client, a dynamic informer
//     on its custom resources, and their create, patch and delete;
//   - leader election on a coordination.k8s.io/v1 Lease, released on exit.
//
// Every request goes through a recording transport, so the program also checks that
// pods really were read as protobuf and listed by WatchList (sendInitialEvents).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

const wait30 = 30 * time.Second

// recorder keeps what went over the wire: request URLs and response content types.
type recorder struct {
	mu    sync.Mutex
	calls []string // "METHOD URL -> content-type"
	next  http.RoundTripper
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.calls = append(r.calls, fmt.Sprintf("%s %s -> %s", req.Method, req.URL.String(),
			resp.Header.Get("Content-Type")))
		r.mu.Unlock()
	}
	return resp, err
}

func (r *recorder) saw(parts ...string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, call := range r.calls {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(call, p)
		}
		if all {
			return true
		}
	}
	return false
}

func fail(step string, format string, args ...any) {
	fmt.Printf("FAIL %s: %s\n", step, fmt.Sprintf(format, args...))
	os.Exit(1)
}

func check(step string, err error) {
	if err != nil {
		fail(step, "%v", err)
	}
}

// seen collects an informer's events by object name.
type seen struct {
	mu     sync.Mutex
	events map[string][]string
}

func newSeen() *seen { return &seen{events: map[string][]string{}} }

func (s *seen) add(kind string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	accessor, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	s.mu.Lock()
	s.events[accessor.GetName()] = append(s.events[accessor.GetName()], kind)
	s.mu.Unlock()
}

func (s *seen) handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.add("add", obj) },
		UpdateFunc: func(_, obj any) { s.add("update", obj) },
		DeleteFunc: func(obj any) { s.add("delete", obj) },
	}
}

// waitFor polls until the events of name include want, in order of first appearance.
func (s *seen) waitFor(ctx context.Context, step, name string, want ...string) {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait30, true,
		func(context.Context) (bool, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			got := strings.Join(s.events[name], ",")
			for _, w := range want {
				if !strings.Contains(got, w) {
					return false, nil
				}
			}
			return true, nil
		})
	if err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		fail(step, "%s: saw %v, want %v", name, s.events[name], want)
	}
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the server")
	namespace := flag.String("namespace", "clientgo", "namespace to work in (created)")
	group := flag.String("group", "clientgo.example.com", "the custom resource's group")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	check("config", err)
	rec := &recorder{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec }
	cfg.Timeout = wait30
	proto := rest.CopyConfig(cfg)
	proto.ContentType = "application/vnd.kubernetes.protobuf"
	proto.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs := kubernetes.NewForConfigOrDie(proto)
	dyn := dynamic.NewForConfigOrDie(cfg)
	meta := metadata.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := *namespace

	_, err = cs.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	check("namespace", err)
	fmt.Println("ok namespace")

	podInformer(ctx, cs, rec, ns)
	applyAndMetadata(ctx, cs, meta, ns)
	customResources(ctx, dyn, ns, *group)
	leaderElection(ctx, cs, ns)
	fmt.Println("ok all")
}

func podInformer(ctx context.Context, cs kubernetes.Interface, rec *recorder, ns string) {
	pods := newSeen()
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().Pods().Informer()
	_, err := informer.AddEventHandler(pods.handler())
	check("pod informer", err)
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fail("pod informer", "never synced")
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p1", Labels: map[string]string{"app": "clientgo"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	check("pod create", err)
	// defaulted by the server, as kube-apiserver defaults every decode
	if created.Spec.RestartPolicy != corev1.RestartPolicyAlways || created.Spec.DNSPolicy == "" {
		fail("pod create", "not defaulted: restartPolicy=%q dnsPolicy=%q",
			created.Spec.RestartPolicy, created.Spec.DNSPolicy)
	}
	created.Labels["step"] = "updated"
	_, err = cs.CoreV1().Pods(ns).Update(ctx, created, metav1.UpdateOptions{})
	check("pod update", err)
	zero := int64(0)
	check("pod delete", cs.CoreV1().Pods(ns).Delete(ctx, "p1",
		metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	pods.waitFor(ctx, "pod informer", "p1", "add", "update", "delete")
	if !rec.saw("/namespaces/"+ns+"/pods", "sendInitialEvents=true", "watch=true") {
		fail("pod informer", "no WatchList request for pods: %v", rec.calls)
	}
	if !rec.saw("POST", "/namespaces/"+ns+"/pods", "application/vnd.kubernetes.protobuf") {
		fail("pod informer", "pods were not created in protobuf")
	}
	fmt.Println("ok pod informer (protobuf, WatchList): add, update, delete")
}

func applyAndMetadata(ctx context.Context, cs kubernetes.Interface, meta metadata.Interface,
	ns string) {
	configmaps := newSeen()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	factory := metadatainformer.NewFilteredSharedInformerFactory(meta, 0, ns, nil)
	informer := factory.ForResource(gvr).Informer()
	_, err := informer.AddEventHandler(configmaps.handler())
	check("metadata informer", err)
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fail("metadata informer", "never synced")
	}

	apply := corev1ac.ConfigMap("cm1", ns).WithData(map[string]string{"a": "1"})
	got, err := cs.CoreV1().ConfigMaps(ns).Apply(ctx, apply,
		metav1.ApplyOptions{FieldManager: "clientgo"})
	check("apply", err)
	if len(got.ManagedFields) != 1 || got.ManagedFields[0].Manager != "clientgo" ||
		got.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		fail("apply", "managedFields %v", got.ManagedFields)
	}
	other := corev1ac.ConfigMap("cm1", ns).WithData(map[string]string{"a": "2"})
	_, err = cs.CoreV1().ConfigMaps(ns).Apply(ctx, other,
		metav1.ApplyOptions{FieldManager: "other"})
	if !apierrors.IsConflict(err) {
		fail("apply", "a second manager's change of data.a: %v, want a conflict", err)
	}
	forced, err := cs.CoreV1().ConfigMaps(ns).Apply(ctx, other,
		metav1.ApplyOptions{FieldManager: "other", Force: true})
	check("apply --force", err)
	if forced.Data["a"] != "2" {
		fail("apply --force", "data %v", forced.Data)
	}
	configmaps.waitFor(ctx, "metadata informer", "cm1", "add", "update")
	item, exists, err := informer.GetStore().GetByKey(ns + "/cm1")
	check("metadata informer", err)
	pom, ok := item.(*metav1.PartialObjectMetadata)
	if !exists || !ok || pom.Name != "cm1" {
		fail("metadata informer", "store holds %T %v", item, item)
	}
	fmt.Println("ok server-side apply (conflict, force) and metadata informer")
}

func customResources(ctx context.Context, dyn dynamic.Interface, ns, group string) {
	crds := schema.GroupVersionResource{
		Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "gadgets." + group},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "kind": "Gadget"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{"spec": map[string]any{
						"type": "object",
						"properties": map[string]any{"size": map[string]any{"type": "integer"}},
					}},
				}},
			}},
		},
	}}
	_, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{})
	check("crd", err)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, wait30, true,
		func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			return err == nil, nil
		})
	check("crd established", err)

	gadgets := newSeen()
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	informer := factory.ForResource(gvr).Informer()
	_, err = informer.AddEventHandler(gadgets.handler())
	check("dynamic informer", err)
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fail("dynamic informer", "never synced")
	}
	gadget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g1"},
		"spec":     map[string]any{"size": int64(1)},
	}}
	_, err = dyn.Resource(gvr).Namespace(ns).Create(ctx, gadget, metav1.CreateOptions{})
	check("cr create", err)
	patched, err := dyn.Resource(gvr).Namespace(ns).Patch(ctx, "g1", types.MergePatchType,
		[]byte(`{"spec":{"size":2}}`), metav1.PatchOptions{})
	check("cr patch", err)
	size, _, _ := unstructured.NestedInt64(patched.Object, "spec", "size")
	if size != 2 {
		fail("cr patch", "spec.size %d", size)
	}
	check("cr delete", dyn.Resource(gvr).Namespace(ns).Delete(ctx, "g1", metav1.DeleteOptions{}))
	gadgets.waitFor(ctx, "dynamic informer", "g1", "add", "update", "delete")
	check("crd delete", dyn.Resource(crds).Delete(ctx, "gadgets."+group, metav1.DeleteOptions{}))
	fmt.Println("ok custom resources: dynamic create, patch, delete, informer")
}

func leaderElection(ctx context.Context, cs kubernetes.Interface, ns string) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: "clientgo-leader", Namespace: ns},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "clientgo-1"},
	}
	led := false
	runCtx, stop := context.WithCancel(ctx)
	leaderelection.RunOrDie(runCtx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, "clientgo-leader",
					metav1.GetOptions{})
				check("leader election", err)
				if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "clientgo-1" {
					fail("leader election", "lease holder %v", lease.Spec.HolderIdentity)
				}
				led = true
				// cancel between two renewals (the first runs as leading starts, then
				// every RetryPeriod): a renewal cut mid-flight may still commit, and
				// client-go's release would then conflict with its own write
				time.Sleep(time.Second)
				stop()
			},
			OnStoppedLeading: func() {},
		},
	})
	if !led {
		fail("leader election", "never led")
	}
	lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, "clientgo-leader", metav1.GetOptions{})
	check("leader election", err)
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		fail("leader election", "not released: holder %q", *lease.Spec.HolderIdentity)
	}
	fmt.Println("ok leader election on a Lease (acquired, released)")
}
