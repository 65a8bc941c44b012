// A kubelet pod-resources server for Plexus's integration tests: grpc-go serving
// v1.PodResourcesLister on a unix socket, with the pods' devices read from a JSON file. It is
// built in the test inside an unpacked Multus source tree, whose vendor directory holds grpc-go
// and kubelet's pod-resources v1 API (this kubelet API has List but not Get, so grpc-go answers
// Get with UNIMPLEMENTED, as an older kubelet does). It prints "ready" once it listens, and each
// call it serves as "call <method>", so the test can see which were made.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	podresources "k8s.io/kubelet/pkg/apis/podresources/v1"
)

type device struct {
	ResourceName string   `json:"resourceName"`
	DeviceIds    []string `json:"deviceIds"`
}

type container struct {
	Name    string   `json:"name"`
	Devices []device `json:"devices"`
}

type pod struct {
	Namespace  string      `json:"namespace"`
	Name       string      `json:"name"`
	Containers []container `json:"containers"`
}

type server struct {
	podresources.UnimplementedPodResourcesListerServer
	pods []pod
}

func (s *server) List(
	_ context.Context, _ *podresources.ListPodResourcesRequest,
) (*podresources.ListPodResourcesResponse, error) {
	fmt.Println("call List")
	out := &podresources.ListPodResourcesResponse{}
	for _, p := range s.pods {
		pr := &podresources.PodResources{Name: p.Name, Namespace: p.Namespace}
		for _, c := range p.Containers {
			cr := &podresources.ContainerResources{Name: c.Name, CpuIds: []int64{2, 3}}
			for _, d := range c.Devices {
				cr.Devices = append(cr.Devices, &podresources.ContainerDevices{
					ResourceName: d.ResourceName,
					DeviceIds:    d.DeviceIds,
				})
			}
			pr.Containers = append(pr.Containers, cr)
		}
		out.PodResources = append(out.PodResources, pr)
	}
	return out, nil
}

func main() {
	socket := flag.String("socket", "", "unix socket to listen on")
	devices := flag.String("devices", "", "JSON file: the pods and their devices")
	flag.Parse()
	raw, err := os.ReadFile(*devices)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var pods []pod
	if err := json.Unmarshal(raw, &pods); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	listener, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	grpcServer := grpc.NewServer()
	podresources.RegisterPodResourcesListerServer(grpcServer, &server{pods: pods})
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		grpcServer.Stop()
	}()
	fmt.Println("ready")
	if err := grpcServer.Serve(listener); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
