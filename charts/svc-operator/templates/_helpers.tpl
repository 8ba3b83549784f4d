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

{{/*
The operator's WATCH_NAMESPACE for the webhook container, from where the manager container gets
it: the last extraEnv entry of that name (explicit env wins over envFrom), else the key of each
envFrom Secret or ConfigMap, optional (a later source wins, as in envFrom). The webhook adds the
operator's finalizer only in these namespaces: elsewhere nobody would remove it.
*/}}
{{- define "svc-operator.watchNamespaceEnv" -}}
{{- $explicit := list }}
{{- range .Values.extraEnv }}
{{- if eq .name "WATCH_NAMESPACE" }}{{ $explicit = append $explicit . }}{{ end }}
{{- end }}
{{- if $explicit }}
{{- toYaml (list (last $explicit)) }}
{{- else }}
{{- range .Values.envFrom }}
{{- $prefix := .prefix | default "" }}
{{- $ref := .secretRef | default .configMapRef }}
{{- if and $ref (hasPrefix $prefix "WATCH_NAMESPACE") }}
- name: WATCH_NAMESPACE
  valueFrom:
    {{ ternary "secretKeyRef" "configMapKeyRef" (hasKey . "secretRef") }}:
      name: {{ $ref.name }}
      key: {{ trimPrefix $prefix "WATCH_NAMESPACE" }}
      optional: true
{{- end }}
{{- end }}
{{- end }}
{{- end }}
