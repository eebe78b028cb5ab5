# docker.io/customerapi/kind-local-path-provisioner:<version>, built here by
# deploy/kind/images.sh: the provisioner from tools/kind/local-path-provisioner, FROM
# scratch. The manifest (../manifests/default-storage.yaml) runs `local-path-provisioner`
# from PATH.
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin
ENTRYPOINT ["/usr/local/bin/local-path-provisioner"]
