"""The watch cache: kube-apiserver's cacher, serving RV=0 reads and watches from memory."""
