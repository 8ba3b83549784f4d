{{- define "svc-dashboard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: svc-dashboard
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: svc
{{- end }}

{{- define "svc-dashboard.selectorLabels" -}}
app.kubernetes.io/name: svc-dashboard
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Refuses combinations the schema can't express. */}}
{{- define "svc-dashboard.validate" -}}
{{- if and (eq .Values.storage "postgres") (not .Values.postgres.urlSecret.name) -}}
{{- fail "storage=postgres needs postgres.urlSecret.name: a Secret whose key (postgres.urlSecret.key, default url) holds the PostgreSQL URL" -}}
{{- end -}}
{{- if and (eq .Values.storage "sqlite") (gt (int .Values.replicaCount) 1) -}}
{{- fail "storage=sqlite runs one replica (the SQLite file belongs to one pod): set replicaCount=1 or storage=postgres" -}}
{{- end -}}
{{- end }}
