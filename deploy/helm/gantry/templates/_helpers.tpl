{{/* Chart name, overridable. */}}
{{- define "gantry.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object name prefix: the release name, with the chart name unless the release already contains it. */}}
{{- define "gantry.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "gantry.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "gantry.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gantry
{{- end }}

{{/* Labels that select the portal pods. */}}
{{- define "gantry.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gantry.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The portal's ServiceAccount. */}}
{{- define "gantry.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gantry.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret with the OIDC client secret and the database URL. */}}
{{- define "gantry.secretName" -}}
{{- default (include "gantry.fullname" .) .Values.existingSecret.name }}
{{- end }}

{{/* Namespace of the image allowlist ConfigMap the admission policy reads (GANTRY_SYSTEM_NAMESPACE). */}}
{{- define "gantry.systemNamespace" -}}
{{- default .Release.Namespace .Values.config.systemNamespace }}
{{- end }}
