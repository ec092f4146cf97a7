// Package localpath holds what the built-in local-path provisioner
// (controlplane/controllers/volume) and the node agents (controlplane/node)
// agree on: the provisioner's name, the Node annotation through which a
// node agent tells where its volume directories live, and the directory of
// a volume. It touches nothing: the provisioner writes only API objects and
// each node agent makes and removes the directories of its own node.
package localpath
