# Development PostgreSQL of the chart (helm/customer-api, postgresql.enabled): bookworm's
# postgresql-15 from Debian's packages, with the interface of the official `postgres`
# image that templates/postgresql.yaml relies on: POSTGRES_USER, POSTGRES_PASSWORD and
# PGDATA, the scripts of /docker-entrypoint-initdb.d run once on an empty data directory,
# user and group 999, pg_isready and psql on the PATH (the probes and the services'
# wait-for-postgresql init container), a read-only root file system (writes go to PGDATA,
# /var/run/postgresql and /tmp only). Not for production.
#
# The build context is this directory:
#   docker build -f deploy/docker/dev/postgresql.Dockerfile -t customerapi/postgresql deploy/docker/dev
# BASE_IMAGE defaults to Debian's public image (the packages are then installed from
# Debian's archive); deploy/images/images.sh passes a root file system that already holds
# them (the one rootfs.sh makes for images.sh), and builds with no network.
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE}
RUN set -eu; \
    if [ ! -x /usr/lib/postgresql/15/bin/postgres ]; then \
        mkdir -p /etc/postgresql-common; \
        echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.conf; \
        apt-get update; \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15; \
        rm -rf /var/lib/apt/lists/* /var/cache/apt/*; \
    fi; \
    # The cluster Debian's package may have created is not used: the entrypoint makes one in PGDATA.
    rm -rf /var/lib/postgresql/15 /etc/postgresql/15; \
    # The official image's user: postgres, uid and gid 999.
    groupmod -g 999 postgres; \
    usermod -u 999 -g 999 postgres; \
    mkdir -p /var/lib/postgresql/data /var/run/postgresql /docker-entrypoint-initdb.d; \
    chown -R 999:999 /var/lib/postgresql /var/run/postgresql; \
    chmod 2775 /var/run/postgresql; \
    /usr/lib/postgresql/15/bin/postgres --version
COPY postgresql-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PGDATA=/var/lib/postgresql/data \
    LANG=C.UTF-8
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="customerapi-postgresql" \
      org.opencontainers.image.description="Customer API platform: development PostgreSQL 15 from Debian's packages (not for production)" \
      org.opencontainers.image.vendor="Customer API platform" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
USER 999:999
EXPOSE 5432
# PostgreSQL's "fast shutdown" (as the official image).
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
