// Package endpoint is the Endpoints controller: for every Service with a
// selector it keeps an Endpoints object of the same name listing the
// selected pods' IPs and resolved target ports, ready pods under
// addresses and the others under notReadyAddresses, as `kubectl get
// endpoints` and `kubectl describe service` show them. It reads Services,
// pods and Endpoints through informers and writes Endpoints through the
// API.
package endpoint
