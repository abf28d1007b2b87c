// Package deploy holds no code: it is the home of the deployment files
// (kubernetes/: kustomize base, overlays and the training Job example;
// monitoring/: the Grafana dashboard and the Prometheus rules) and of the
// tests that check them against a real granary binary.
package deploy
