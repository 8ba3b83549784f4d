{{- define "svc-gateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: svc-gateway
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: svc
{{- end }}

{{- define "svc-gateway.selectorLabels" -}}
app.kubernetes.io/name: svc-gateway
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The Secret of the default TLS certificate, or empty when there is none. */}}
{{- define "svc-gateway.tlsSecret" -}}
{{- if .Values.tls.secretName -}}
{{ .Values.tls.secretName }}
{{- else if .Values.tls.certManager.enabled -}}
svc-gateway-default-tls
{{- end -}}
{{- end }}
