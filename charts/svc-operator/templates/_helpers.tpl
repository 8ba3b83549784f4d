{{/* Names are fixed (the operator's documentation and tools refer to them); the namespace is the release's. */}}

{{- define "svc-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: svc-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: svc
{{- end }}

{{- define "svc-operator.selectorLabels" -}}
app.kubernetes.io/name: svc-operator
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end }}

{{/* The webhook server's port: the deprecated webhookPort wins when it is set. */}}
{{- define "svc-operator.webhookPort" -}}
{{- if kindIs "invalid" .Values.webhookPort -}}
{{ .Values.webhooks.port }}
{{- else -}}
{{ .Values.webhookPort }}
{{- end -}}
{{- end }}

{{- define "svc-operator.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* Secret and key holding the license, or nothing. */}}
{{- define "svc-operator.licenseSecret" -}}
{{- if .Values.global.secrets.useSecretName -}}
{{ .Values.global.secrets.useSecretName }}
{{- else if .Values.global.license.operator -}}
svc-operator-license
{{- end -}}
{{- end }}

{{- define "svc-operator.webhooksOn" -}}
{{- if and .Values.global.components.operator .Values.webhooks.enabled -}}true{{- end -}}
{{- end }}
