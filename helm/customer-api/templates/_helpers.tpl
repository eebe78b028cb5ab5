{{/* Shared helpers: names, labels, the merged per-deployable settings, and the pieces
every workload uses (security contexts, the wait-for-database init container). */}}

{{/* The chart's name. */}}
{{- define "customer-api.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object's name. */}}
{{- define "customer-api.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; call with (dict "root" $ "component" "gateway"). */}}
{{- define "customer-api.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: customer-api
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
{{ include "customer-api.selectorLabels" . }}
{{- end -}}

{{/* Labels that select one component's pods. */}}
{{- define "customer-api.selectorLabels" -}}
app.kubernetes.io/name: {{ include "customer-api.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Labels that select every pod of the release (the clients of the dependencies). */}}
{{- define "customer-api.releaseSelector" -}}
app.kubernetes.io/name: {{ include "customer-api.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* One deployable's settings: `defaults` with the deployable's own values on top. Maps
merge one level deep (env, autoscaling, ...); anything else is replaced. Call with
(dict "root" $ "values" .Values.services.topics). */}}
{{- define "customer-api.settings" -}}
{{- $out := deepCopy .root.Values.defaults -}}
{{- range $k, $v := .values -}}
{{- $cur := get $out $k -}}
{{- if and (kindIs "map" $v) (kindIs "map" $cur) -}}
{{- $sub := deepCopy $cur -}}
{{- range $k2, $v2 := $v }}{{ $_ := set $sub $k2 $v2 }}{{ end -}}
{{- $_ := set $out $k $sub -}}
{{- else -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* Every enabled deployable, the gateway first: a YAML document {items: [{name, gateway,
settings}]} for `fromYaml`. */}}
{{- define "customer-api.deployables" -}}
{{- $items := list (dict "name" "gateway" "gateway" true "settings" (include "customer-api.settings" (dict "root" . "values" .Values.gateway) | fromYaml)) -}}
{{- range $name, $svc := .Values.services -}}
{{- if $svc.enabled -}}
{{- $items = append $items (dict "name" $name "gateway" false "settings" (include "customer-api.settings" (dict "root" $ "values" $svc) | fromYaml)) -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "items" $items) -}}
{{- end -}}

{{/* The image of a deployable: <prefix>/<name>:<tag>, or its own repository and tag. */}}
{{- define "customer-api.image" -}}
{{- $img := .settings.image | default dict -}}
{{- $repo := $img.repository | default (printf "%s/%s" .root.Values.image.prefix .name) -}}
{{- $tag := $img.tag | default .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- if hasPrefix "sha256:" $tag -}}
{{- printf "%s@%s" $repo $tag -}}
{{- else -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end -}}

{{/* The pod security context of the platform's own pods: the distroless "nonroot" user. */}}
{{- define "customer-api.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .uid | default 65532 }}
runAsGroup: {{ .uid | default 65532 }}
fsGroup: {{ .uid | default 65532 }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The container security context of every container. */}}
{{- define "customer-api.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: [ALL]
{{- end -}}

{{/* The name of a deployable's Secret (its own, or the existing one it names). */}}
{{- define "customer-api.secretName" -}}
{{- .settings.existingSecret | default (printf "%s-%s" (include "customer-api.fullname" .root) .name) -}}
{{- end -}}

{{/* DATABASE_URL of a deployable: the in-chart PostgreSQL's, or externalDatabase.urls. */}}
{{- define "customer-api.databaseURL" -}}
{{- $root := .root -}}
{{- if $root.Values.postgresql.enabled -}}
{{- $db := .settings.database | default .name -}}
{{- printf "postgres://%s:%s@%s-postgresql:5432/%s?sslmode=disable" (urlquery $root.Values.postgresql.username) (urlquery $root.Values.postgresql.password) (include "customer-api.fullname" $root) $db -}}
{{- else -}}
{{- $url := get $root.Values.externalDatabase.urls .name -}}
{{- if not $url -}}
{{- fail (printf "externalDatabase.urls.%s is required (or postgresql.enabled=true, or %s.existingSecret)" .name .name) -}}
{{- end -}}
{{- $url -}}
{{- end -}}
{{- end -}}

{{/* The init container that waits for the in-chart PostgreSQL and creates the deployable's
database when it is missing (a service added after the volume was first initialised). */}}
{{- define "customer-api.waitForPostgres" -}}
{{- $full := include "customer-api.fullname" .root -}}
{{- $db := .settings.database | default .name -}}
- name: wait-for-postgresql
  image: {{ .root.Values.postgresql.image }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  command:
    - sh
    - -c
    - |
      until pg_isready -q -h "$PGHOST" -U "$PGUSER"; do echo waiting for postgresql; sleep 2; done
      if [ -z "$(psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" ]; then
        psql -d postgres -c "CREATE DATABASE \"$DB\"" || true
      fi
  env:
    - {name: PGHOST, value: {{ printf "%s-postgresql" $full | quote }}}
    - {name: PGUSER, value: {{ .root.Values.postgresql.username | quote }}}
    - {name: DB, value: {{ $db | quote }}}
    - name: PGPASSWORD
      valueFrom:
        secretKeyRef: {name: {{ printf "%s-postgresql" $full }}, key: POSTGRES_PASSWORD}
  resources:
    requests: {cpu: 10m, memory: 32Mi}
    limits: {cpu: 200m, memory: 64Mi}
  securityContext:
    {{- include "customer-api.containerSecurityContext" . | nindent 4 }}
{{- end -}}
