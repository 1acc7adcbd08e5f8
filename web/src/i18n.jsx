// The console's own language: English by default, Chinese as a setting
// kept in this browser (localStorage). It covers the console's own texts;
// what the API sends (outcome messages, next steps, questions, error
// messages) is shown as sent, in the agent's locale.

import { useEffect, useState } from 'preact/hooks';

const LANG = 'warden.lang';

export const languages = [
  { value: 'en', label: 'English' },
  { value: 'zh-CN', label: '中文' },
];

const zh = {
  'Sessions': '会话',
  'Approvals': '审批',
  'Tool feedback': '工具反馈',
  'Plugins': '插件',
  'Skills': '技能',
  'Plugin slots': '插件槽位',
  'Instances': '实例',
  'Warden console': 'Warden 控制台',
  'Paste an API key. A tenant key opens that tenant\'s sessions, approvals, tool feedback, plugins and skills; an admin key opens the plugin slots and instances.':
    '粘贴一个 API 密钥。租户密钥打开该租户的会话、审批、工具反馈、插件和技能；管理员密钥打开插件槽位和实例。',
  'API key': 'API 密钥',
  'Log in': '登录',
  'Checking…': '检查中…',
  'Log out': '退出',
  'The key stays in this tab\'s session storage and is sent only to this server.': '密钥只保存在本标签页的会话存储中，只发送给本服务器。',
  'platform (admin key)': '平台（管理员密钥）',
  'tenant key': '租户密钥',
  'Skip to content': '跳到内容',
  'Keyboard shortcuts': '键盘快捷键',
  'Keyboard': '键盘',
  'search': '搜索',
  'new: install a module (Plugins), upload a skill (Skills)': '新建：安装模块（插件），上传技能（技能）',
  'this help': '本帮助',
  'close': '关闭',
  'Tab moves through every control; forms submit on Enter': 'Tab 在各控件间移动；表单按 Enter 提交',
  'Press ? for keyboard shortcuts · the API is described at': '按 ? 查看键盘快捷键 · API 说明见',
  'Language': '语言',
  'Status': '状态',
  'Refresh': '刷新',
  'Load more': '加载更多',
  'live updates down: reading every 3 s': '实时更新中断：每 3 秒读取一次',
  '● live': '● 实时',
  'connecting…': '连接中…',
  'No pending approvals.': '没有待审批项。',
  'No confirmed approvals.': '没有已确认的审批。',
  'No rejected approvals.': '没有已拒绝的审批。',
  'No cancelled approvals.': '没有已取消的审批。',
  'Confirm': '确认',
  'Reject': '拒绝',
  'Cancel': '取消',
  'run the write as held': '按保留的参数执行写操作',
  'refuse it; the agent is told and may try another way': '拒绝；智能体会得知并可能换一种方式',
  'cancel the task': '取消任务',
  'Sending…': '发送中…',
  'Why reject it? (optional; kept with the approval)': '为什么拒绝？（可选；随审批保存）',
  'Why cancel the task? (optional; kept with the approval)': '为什么取消任务？（可选；随审批保存）',
  'Yes, reject': '确定拒绝',
  'Yes, cancel the task': '确定取消任务',
  'Back': '返回',
  'session': '会话',
  'task': '任务',
  'node': '节点',
  'held': '保留于',
  'answered': '答复',
  'by': '答复人',
  'reason': '原因',
  'No argument summary.': '没有参数摘要。',
  'arguments digest': '参数摘要值',
  'Answered': '已答复',
  'Arguments of the held write': '保留的写操作的参数',
  'Decision': '决定',
  'pending': '待处理',
  "Agent's language": '智能体语言',
  'read-only': '只读',
  'Waiting for an answer': '等待回答',
  'set by the server (serve --agents: locale); the API cannot change it while it runs': '由服务器设置（serve --agents: locale）；运行中无法通过 API 修改',
};

const dicts = { 'zh-CN': zh };

let current = localStorage.getItem(LANG) || 'en';
if (!languages.some((l) => l.value === current)) current = 'en';
document.documentElement.lang = current;

// lang is the console's language.
export function lang() {
  return current;
}

// setLang changes the console's language and keeps it.
export function setLang(v) {
  if (!languages.some((l) => l.value === v)) return;
  current = v;
  localStorage.setItem(LANG, v);
  document.documentElement.lang = v;
  dispatchEvent(new CustomEvent('warden:lang'));
}

// t is the console's text s in its language (s itself in English, or when
// no translation is kept).
export function t(s) {
  return dicts[current]?.[s] ?? s;
}

// useLang re-renders a view when the language changes.
export function useLang() {
  const [, set] = useState(current);
  useEffect(() => {
    const on = () => set(current);
    addEventListener('warden:lang', on);
    return () => removeEventListener('warden:lang', on);
  }, []);
  return current;
}

// LangSelect is the language setting.
export function LangSelect() {
  const l = useLang();
  return (
    <label class="lang">{t('Language')}{' '}
      <select aria-label={t('Language')} value={l} onChange={(e) => setLang(e.currentTarget.value)}>
        {languages.map((o) => <option value={o.value}>{o.label}</option>)}
      </select>
    </label>
  );
}
